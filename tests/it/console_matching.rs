//! The console's dead letters by MATCH (DESIGN §6b, §7b) in a real
//! headless chromium against the real binary on a SQLite file: "Preview"
//! counts and changes nothing, "Replay matching" and "Delete matching" ask
//! for a confirmation naming the count, then run as jobs shown with their
//! progress.

use fantoccini::Locator;

use crate::console::{click_button, screenshot, send, session, sign_in, wait_text};
use crate::delivery_kit::{ADMIN_TOKEN, App, Backend, config, eventually, source};
use crate::support::{Hookgate, http};

/// An event type a hostile sender chose; GitHub does not sign it, and it
/// is shown, never run.
const HOSTILE: &str = "<script>window.hacked=1</script>";
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
    // The app refuses the first five deliveries with a 400: five dead
    // letters, one of a type a hostile sender chose.
    app.then_answer(&[400, 400, 400, 400, 400]);
    for (id, kind) in [
        ("inv_a", "invoice.paid"),
        ("inv_b", "invoice.paid"),
        ("ch_a", "charge.failed"),
        ("ch_b", "charge.failed"),
        ("evil", HOSTILE),
    ] {
        let body = format!(r#"{{"id":"{id}"}}"#);
        assert_eq!(
            send(&hookgate, "shop", id, &body, &[("x-github-event", kind)]).await,
            200
        );
    }
    eventually("five dead letters", || {
        (backend.dead_letters() == 5).then_some(())
    })
    .await;
    let seen_before = app.seen().len();

    // A start or a cancel without the CSRF token, or from another origin, is refused.
    let (cookie, csrf) = session(&admin).await;
    for (what, origin, body) in [
        ("no CSRF token", None, "kind=delete&source=shop".to_owned()),
        (
            "another origin",
            Some("http://evil.example"),
            format!("kind=delete&source=shop&csrf={csrf}"),
        ),
    ] {
        for path in [
            "/console/dead-letters/start",
            "/console/dead-letters/jobs/cancel",
        ] {
            let mut headers = vec![
                ("cookie".to_owned(), cookie.clone()),
                (
                    "content-type".to_owned(),
                    "application/x-www-form-urlencoded".to_owned(),
                ),
            ];
            if let Some(o) = origin {
                headers.push(("origin".to_owned(), o.to_owned()));
            }
            let url = format!("{admin}{path}");
            let answer = http(http::Method::POST, &url, &headers, body.clone()).await;
            assert_eq!(answer.status, 403, "{what} on {path}: {answer:?}");
        }
    }
    assert_eq!(backend.dead_letters(), 5, "nothing was deleted");

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
    assert_eq!(backend.dead_letters(), 5, "a preview removes nothing");
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
    assert_eq!(
        backend.dead_letters(),
        3,
        "the two charges and the hostile one"
    );

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
    eventually("the charge dead letters gone", || {
        (backend.dead_letters() == 1).then_some(())
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
    // The hostile type is shown as text in a preview, and nothing runs.
    client
        .goto(&format!(
            "{admin}/console/dead-letters?source=shop&preview=1"
        ))
        .await
        .expect("preview of everything");
    let sample = wait_text(client, "table.sample", "window.hacked").await;
    assert!(sample.contains(HOSTILE), "{sample}");
    let ran = client
        .execute("return window.hacked === undefined;", vec![])
        .await
        .expect("script");
    assert_eq!(ran, serde_json::Value::Bool(true), "the hostile type ran");
    browser.close().await;
}
