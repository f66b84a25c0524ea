//! The console's dead letters by MATCH (DESIGN §6b, §7b) in a real
//! headless chromium against the real binary on a SQLite file: "Preview"
//! counts and changes nothing, "Replay matching" and "Delete matching" ask
//! for a confirmation naming the count, then run as jobs shown with their
//! progress.

use fantoccini::Locator;

use crate::console::{click_button, screenshot, send, sign_in, wait_text};
use crate::delivery_kit::{ADMIN_TOKEN, App, Backend, config, eventually, source};
use crate::support::Hookgate;
use crate::support::browser::Browser;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_previewed_replayed_and_deleted_by_match() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let hookgate = Hookgate::start(&config(
        &app,
        &backend,
        &source("shop", "delivery = \"queue\""),
    ))
    .await;
    let admin = hookgate.admin_url();
    // The app refuses the first four deliveries with a 400: four dead letters.
    app.then_answer(&[400, 400, 400, 400]);
    for (id, kind) in [
        ("inv_a", "invoice.paid"),
        ("inv_b", "invoice.paid"),
        ("ch_a", "charge.failed"),
        ("ch_b", "charge.failed"),
    ] {
        let body = format!(r#"{{"id":"{id}"}}"#);
        assert_eq!(
            send(&hookgate, "shop", id, &body, &[("x-github-event", kind)]).await,
            200
        );
    }
    eventually("four dead letters", || {
        (backend.dead_letters() == 4).then_some(())
    })
    .await;
    let seen_before = app.seen().len();

    let browser = Browser::start().await;
    let client = &browser.client;
    sign_in(client, &admin, ADMIN_TOKEN).await;
    wait_text(client, "table.sources", "shop").await;
    client
        .goto(&format!("{admin}/console/dead-letters"))
        .await
        .expect("dead letters page");
    let field = client
        .wait()
        .for_element(Locator::Css("form.match input[name=type]"))
        .await
        .expect("the match form");
    field.send_keys("invoice.*").await.expect("type a glob");
    click_button(client, "//form[contains(@class,'match')]", "Preview").await;
    let matched = wait_text(client, "p.matched", "dead letters match").await;
    assert!(matched.starts_with("2 dead letters match"), "{matched}");
    let sample = wait_text(client, "table.sample", "inv_a").await;
    assert!(
        sample.contains("inv_b") && !sample.contains("ch_a"),
        "{sample}"
    );
    assert_eq!(app.seen().len(), seen_before, "a preview sends nothing");
    assert_eq!(backend.dead_letters(), 4, "a preview removes nothing");
    screenshot(client, "dead-letters-match").await;

    // "Replay matching" asks first, naming the count.
    app.answer_with(200);
    click_button(
        client,
        "//form[contains(@class,'confirm-ask')]",
        "Replay matching",
    )
    .await;
    let ask = wait_text(client, "p.confirm-count", "dead letters matching").await;
    assert_eq!(ask, "Replay 2 dead letters matching type=invoice.*?");
    assert_eq!(app.seen().len(), seen_before, "asking sends nothing");
    click_button(client, "//section[contains(@class,'confirm')]", "Confirm").await;
    let notice = wait_text(client, "p.notice", "started").await;
    assert!(notice.starts_with("Job "), "{notice}");
    wait_text(client, "table.jobs", "done").await;
    eventually("both invoices delivered", || {
        ["inv_a", "inv_b"]
            .iter()
            .all(|id| {
                app.seen_event(id)
                    .iter()
                    .filter(|s| s.status == 200)
                    .count()
                    == 1
            })
            .then_some(())
    })
    .await;
    let row = wait_text(client, "table.jobs tbody tr", "replay").await;
    assert!(row.contains("2/2") && row.contains("console"), "{row}");
    assert_eq!(backend.dead_letters(), 2);

    // "Delete matching" the same way: nothing sent, the trail says discarded.
    client
        .goto(&format!(
            "{admin}/console/dead-letters?type=charge.*&preview=1"
        ))
        .await
        .expect("preview by url");
    wait_text(client, "p.matched", "2 dead letters match").await;
    click_button(
        client,
        "//form[contains(@class,'confirm-ask')]",
        "Delete matching",
    )
    .await;
    let ask = wait_text(client, "p.confirm-count", "dead letters matching").await;
    assert_eq!(ask, "Delete 2 dead letters matching type=charge.*?");
    click_button(client, "//section[contains(@class,'confirm')]", "Confirm").await;
    wait_text(client, "p.notice", "started").await;
    eventually("the dead letters gone", || {
        (backend.dead_letters() == 0).then_some(())
    })
    .await;
    for id in ["ch_a", "ch_b"] {
        assert_eq!(
            app.seen_event(id)
                .iter()
                .filter(|s| s.status == 200)
                .count(),
            0,
            "{id}"
        );
    }
    client
        .goto(&format!("{admin}/console/events/shop/ch_a"))
        .await
        .expect("event page");
    wait_text(client, "dl.facts", "discarded").await;
    let facts = wait_text(client, "dl.facts", "console (job ").await;
    assert!(facts.contains("Removed by"), "{facts}");
    browser.close().await;
}
