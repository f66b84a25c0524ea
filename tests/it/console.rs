//! The console (DESIGN §7b) in a real headless chromium, against the real
//! binary on a SQLite file: sign-in, dead letters and their replay, finding
//! an event by id, hostile values shown as text, CSRF and origin checks (the
//! last with a plain HTTP client carrying the session cookie), and an
//! attempt linked to its trace.
//!
//! With `HOOKGATE_CONSOLE_SCREENSHOTS=DIR`, the replay test also writes the
//! three pages it passes through (overview, an event's page, dead letters)
//! as `console-*.png` into DIR; the README's pictures are made that way.

use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::Value;

use crate::delivery_kit::{ADMIN_TOKEN, App, Backend, config, eventually, signed_headers, source};
use crate::support::browser::Browser;
use crate::support::{Hookgate, Metrics, WAIT, http};

const CSP: &str = "default-src 'self'";

/// A queue-mode source whose 4xx answers become dead letters at once.
fn queue_source(name: &str) -> String {
    source(name, "delivery = \"queue\"")
}

/// hookgate on a SQLite file in front of `app`, with `sources`.
async fn start(app: &App, backend: &Backend, sources: &str) -> Hookgate {
    Hookgate::start(&config(app, backend, sources)).await
}

/// Sends a signed event with extra headers to source `name`.
pub(crate) async fn send(
    hookgate: &Hookgate,
    name: &str,
    id: &str,
    body: &str,
    extra: &[(&str, &str)],
) -> u16 {
    let mut headers = signed_headers(id, body.as_bytes());
    for (n, v) in extra {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case(n));
        headers.push(((*n).to_owned(), (*v).to_owned()));
    }
    hookgate
        .post(&format!("/hooks/{name}"), &headers, body.to_owned())
        .await
        .status
}

pub(crate) async fn wait_text(client: &Client, css: &str, needle: &str) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let text = match client.find(Locator::Css(css)).await {
            Ok(e) => e.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if text.contains(needle) {
            return text;
        }
        if tokio::time::Instant::now() >= deadline {
            let url = client
                .current_url()
                .await
                .map(|u| u.to_string())
                .unwrap_or_default();
            let source = client.source().await.unwrap_or_default();
            panic!(
                "{css:?} never showed {needle:?} within {WAIT:?} on {url}; last text: {text:?}\n{source}"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn sign_in(client: &Client, admin: &str, token: &str) {
    client
        .goto(&format!("{admin}/console"))
        .await
        .expect("open console");
    let field = client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("input[name=token]"))
        .await
        .expect("the sign-in form");
    // The field is labelled "Admin token".
    let label = client
        .find(Locator::Css("label[for=token]"))
        .await
        .expect("label")
        .text()
        .await
        .expect("label text");
    assert_eq!(label, "Admin token");
    field.send_keys(token).await.expect("type token");
    client
        .find(Locator::XPath("//button[normalize-space()='Sign in']"))
        .await
        .expect("Sign in button")
        .click()
        .await
        .expect("click Sign in");
}

pub(crate) async fn click_button(client: &Client, scope: &str, label: &str) {
    client
        .find(Locator::XPath(&format!(
            "{scope}//button[normalize-space()='{label}']"
        )))
        .await
        .unwrap_or_else(|e| panic!("button {label:?} in {scope}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {label:?}: {e}"));
}

/// Every resource the page loaded, as URLs.
async fn resources(client: &Client) -> Vec<String> {
    let v = client
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name).concat([location.href]);",
            vec![],
        )
        .await
        .expect("resource entries");
    v.as_array()
        .expect("an array")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

pub(crate) async fn screenshot(client: &Client, name: &str) {
    let png = client.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot of {name}");
    if let Some(dir) = std::env::var_os("HOOKGATE_CONSOLE_SCREENSHOTS") {
        let path = std::path::Path::new(&dir).join(format!("console-{name}.png"));
        std::fs::write(&path, &png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_refused_counted_and_the_right_one_signs_in() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let hookgate = start(&app, &backend, &queue_source("shop")).await;
    let admin = hookgate.admin_url();
    let browser = Browser::start().await;
    let client = &browser.client;

    sign_in(client, &admin, "not-the-token").await;
    wait_text(client, "p.error", "That is not the admin token.").await;
    assert!(
        client.find(Locator::Css("nav")).await.is_err(),
        "a refused sign-in shows no page of the console"
    );
    let metrics = Metrics::parse(&hookgate.admin_get("/metrics").await.text());
    assert_eq!(
        metrics.get("hookgate_console_signin_failures_total", &[]),
        Some(1.0),
        "{}",
        metrics.text
    );

    sign_in(client, &admin, ADMIN_TOKEN).await;
    wait_text(client, "h1", "Overview").await;
    wait_text(client, "table.sources", "shop").await;
    wait_text(client, "section.health", "answering").await;
    // The session cookie is not readable from a script (HttpOnly).
    let cookies = client
        .execute("return document.cookie;", vec![])
        .await
        .expect("cookie");
    assert_eq!(cookies, Value::String(String::new()));
    for url in resources(client).await {
        assert!(url.starts_with(&admin), "a resource from elsewhere: {url}");
    }
    // Nothing the admin token gave away: not in the page, not in the log.
    assert!(!client.source().await.expect("source").contains(ADMIN_TOKEN));
    assert!(
        !hookgate.output().contains(ADMIN_TOKEN),
        "the admin token in the output"
    );

    click_button(client, "//form[contains(@class,'signout')]", "Sign out").await;
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("input[name=token]"))
        .await
        .expect("signed out: the sign-in form again");
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_replayed_one_then_all_each_received_once() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let hookgate = start(&app, &backend, &queue_source("shop")).await;
    let admin = hookgate.admin_url();
    // The app refuses the first three deliveries with a 400: three dead letters.
    app.then_answer(&[400, 400, 400]);
    let ids = ["evt_console_1", "evt_console_2", "evt_console_3"];
    for id in ids {
        let body = format!(r#"{{"id":"{id}","customer":"Ada"}}"#);
        assert_eq!(send(&hookgate, "shop", id, &body, &[]).await, 200);
    }
    eventually("three dead letters", || {
        (backend.dead_letters() == 3).then_some(())
    })
    .await;
    assert_eq!(app.seen().len(), 3);

    let browser = Browser::start().await;
    let client = &browser.client;
    sign_in(client, &admin, ADMIN_TOKEN).await;
    wait_text(client, "table.sources", "shop").await;
    screenshot(client, "overview").await;

    client
        .goto(&format!("{admin}/console/dead-letters?source=shop"))
        .await
        .expect("dead letters page");
    wait_text(client, "main", "evt_console_1").await;
    // Headers and a body preview are on the page.
    let page = client.source().await.expect("source");
    assert!(page.contains("x-github-delivery"), "headers shown");
    assert!(
        page.contains("&quot;customer&quot;:&quot;Ada&quot;")
            || page.contains("\"customer\":\"Ada\"")
    );
    screenshot(client, "dead-letters").await;

    // One entry: the first one's "Replay".
    click_button(
        client,
        "//article[contains(@class,'dead')][.//a[text()='evt_console_1']]",
        "Replay",
    )
    .await;
    wait_text(client, "p.notice", "delivered").await;
    eventually("the first replay delivered", || {
        (app.seen_event("evt_console_1")
            .iter()
            .filter(|s| s.status == 200)
            .count()
            == 1)
            .then_some(())
    })
    .await;
    assert_eq!(backend.dead_letters(), 2);

    // The rest: "Replay all", with its progress and the final count.
    click_button(
        client,
        "//form[contains(@class,'replay-all')]",
        "Replay all",
    )
    .await;
    let done = wait_text(client, "#replay-progress", "Finished.").await;
    assert!(done.contains("2 / 2"), "{done}");
    assert!(done.contains("2 delivered, 0 failed"), "{done}");
    for id in ids {
        let delivered = app
            .seen_event(id)
            .iter()
            .filter(|s| s.status == 200)
            .count();
        assert_eq!(delivered, 1, "{id} delivered {delivered} times");
    }
    assert_eq!(backend.dead_letters(), 0);
    assert_eq!(
        app.seen().len(),
        6,
        "three refusals, three deliveries, nothing else"
    );

    // Find one by id: its page shows both attempts, the queue's 400 and the replay.
    client
        .goto(&format!("{admin}/console/events"))
        .await
        .expect("events");
    wait_text(client, "table.events", "evt_console_2").await;
    let label = client
        .find(Locator::Css("label[for=id]"))
        .await
        .expect("label");
    assert_eq!(label.text().await.expect("label text"), "Event id");
    client
        .find(Locator::Css("input[name=id]"))
        .await
        .expect("the Event id field")
        .send_keys("evt_console_2")
        .await
        .expect("type the id");
    click_button(client, "//form[contains(@class,'search')]", "Search").await;
    wait_text(client, "dl.facts", "delivered").await;
    let attempts = wait_text(client, "table.attempts", "replay").await;
    let rows = client
        .find_all(Locator::Css("table.attempts tbody tr"))
        .await
        .expect("attempt rows");
    assert_eq!(rows.len(), 2, "{attempts}");
    assert!(
        attempts.contains("queue") && attempts.contains("400"),
        "{attempts}"
    );
    assert!(attempts.contains("200"), "{attempts}");
    let url = client.current_url().await.expect("url");
    assert!(
        url.path().ends_with("/console/events/shop/evt_console_2"),
        "{url}"
    );
    screenshot(client, "event").await;
    browser.close().await;
}

/// 55 dead letters: the page shows 50 with their place in the list, the
/// next page the other 5, and "Replay all" names all 55.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_come_fifty_to_a_page() {
    const DEAD: usize = 55;
    let app = App::start().await;
    let backend = Backend::sqlite();
    let hookgate = start(&app, &backend, &queue_source("shop")).await;
    let admin = hookgate.admin_url();
    app.then_answer(&[400; DEAD]);
    for i in 0..DEAD {
        let id = format!("evt_page_{i:02}");
        let body = format!(r#"{{"id":"{id}"}}"#);
        assert_eq!(send(&hookgate, "shop", &id, &body, &[]).await, 200);
    }
    eventually("55 dead letters", || {
        (backend.dead_letters() == DEAD as i64).then_some(())
    })
    .await;

    let browser = Browser::start().await;
    let client = &browser.client;
    sign_in(client, &admin, ADMIN_TOKEN).await;
    wait_text(client, "table.sources", "shop").await;
    client
        .goto(&format!("{admin}/console/dead-letters?source=shop"))
        .await
        .expect("dead letters page");
    wait_text(client, "p.pager", "1–50 of 55").await;
    let shown = client
        .find_all(Locator::Css("article.dead"))
        .await
        .expect("entries");
    assert_eq!(shown.len(), 50);
    wait_text(client, "form.replay-all", "the 55 dead letters of shop").await;
    client
        .find(Locator::Css("p.pager a[rel=next]"))
        .await
        .expect("a link to the next page")
        .click()
        .await
        .expect("follow it");
    wait_text(client, "p.pager", "51–55 of 55").await;
    let shown = client
        .find_all(Locator::Css("article.dead"))
        .await
        .expect("entries");
    assert_eq!(shown.len(), 5);
    assert!(
        client
            .find(Locator::Css("p.pager a[rel=next]"))
            .await
            .is_err(),
        "no page after the last"
    );
    client
        .find(Locator::Css("p.pager a[rel=prev]"))
        .await
        .expect("a link back");
    browser.close().await;
}

/// The session cookie and the CSRF token of a fresh sign-in, by plain HTTP.
pub(crate) async fn session(admin: &str) -> (String, String) {
    let form = format!("token={ADMIN_TOKEN}");
    let signed = http(
        http::Method::POST,
        &format!("{admin}/console/sign-in"),
        &[(
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        form,
    )
    .await;
    assert_eq!(signed.status, 303, "{signed:?}");
    let set = signed.header("set-cookie").expect("a session cookie");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(set.contains(attribute), "{set}");
    }
    let max_age: u64 = set
        .split(';')
        .find_map(|a| a.trim().strip_prefix("Max-Age="))
        .and_then(|v| v.parse().ok())
        .expect("Max-Age");
    assert!(max_age <= 12 * 3600, "{set}");
    let cookie = set.split(';').next().expect("name=value").to_owned();
    let page = http(
        http::Method::GET,
        &format!("{admin}/console/dead-letters"),
        &[("cookie".into(), cookie.clone())],
        "",
    )
    .await;
    assert_eq!(page.status, 200);
    let text = page.text();
    let at = text.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    let csrf = text[at..at + 32].to_owned();
    (cookie, csrf)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_without_the_csrf_token_or_from_another_origin_is_refused() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let hookgate = start(&app, &backend, &queue_source("shop")).await;
    let admin = hookgate.admin_url();
    app.then_answer(&[400]);
    assert_eq!(
        send(&hookgate, "shop", "evt_csrf", r#"{"id":"evt_csrf"}"#, &[]).await,
        200
    );
    eventually("a dead letter", || {
        (backend.dead_letters() == 1).then_some(())
    })
    .await;
    let (cookie, csrf) = session(&admin).await;
    let host = admin.trim_start_matches("http://").to_owned();

    let post = |headers: Vec<(String, String)>, body: String| {
        let url = format!("{admin}/console/dead-letters/replay-all");
        async move {
            let mut all = vec![(
                "content-type".to_owned(),
                "application/x-www-form-urlencoded".to_owned(),
            )];
            all.extend(headers);
            http(http::Method::POST, &url, &all, body).await
        }
    };
    let with_cookie = |extra: &[(&str, &str)]| {
        let mut h = vec![("cookie".to_owned(), cookie.clone())];
        h.extend(
            extra
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
        );
        h
    };
    let refused = [
        ("no CSRF token", with_cookie(&[]), "source=shop".to_owned()),
        (
            "a wrong CSRF token",
            with_cookie(&[]),
            format!("source=shop&csrf={}", "0".repeat(32)),
        ),
        (
            "another origin",
            with_cookie(&[("origin", "http://evil.example")]),
            format!("source=shop&csrf={csrf}"),
        ),
        (
            "a cross-site fetch",
            with_cookie(&[("sec-fetch-site", "cross-site")]),
            format!("source=shop&csrf={csrf}"),
        ),
        ("no session", vec![], format!("source=shop&csrf={csrf}")),
    ];
    for (what, headers, body) in refused {
        let answer = post(headers, body).await;
        assert_eq!(answer.status, 403, "{what}: {answer:?}");
        assert!(
            answer
                .header("content-security-policy")
                .is_some_and(|v| v.starts_with(CSP))
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(backend.dead_letters(), 1, "nothing was replayed");
    assert_eq!(app.seen().len(), 1);

    // The same request from the console's own page goes through.
    let origin = format!("http://{host}");
    let answer = post(
        with_cookie(&[("origin", &origin)]),
        format!("source=shop&csrf={csrf}"),
    )
    .await;
    assert_eq!(answer.status, 303, "{answer:?}");
    eventually("the replay", || (backend.dead_letters() == 0).then_some(())).await;
    assert_eq!(
        app.seen_event("evt_csrf")
            .iter()
            .filter(|s| s.status == 200)
            .count(),
        1
    );

    // Every console answer carries the policy, the sign-in form and the assets too.
    for path in [
        "/console",
        "/console/static/console.css",
        "/console/static/console.js",
        "/console/events",
    ] {
        let answer = hookgate.admin_get(path).await;
        let csp = answer.header("content-security-policy").unwrap_or_default();
        assert!(csp.starts_with(CSP), "{path}: {csp:?}");
    }
    // Without a token the console does not exist.
    let app2 = App::start().await;
    let plain = Hookgate::start(
        &config(&app2, &Backend::sqlite(), &queue_source("shop"))
            .replace(&format!("token = \"{ADMIN_TOKEN}\"\n"), ""),
    )
    .await;
    assert_eq!(plain.admin_get("/console").await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_values_are_shown_as_text_and_nothing_runs() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let hookgate = start(&app, &backend, &queue_source("shop")).await;
    let admin = hookgate.admin_url();
    app.then_answer(&[400]);
    let script = "<script>alert(1)</script>";
    let img = "<img src=x onerror=alert(1)>";
    let body =
        r#"{"id":"evt_x","customer":"<script>window.pwned=1;document.title='pwned'</script>"}"#;
    let status = send(
        &hookgate,
        "shop",
        "evt_<b>x</b>",
        body,
        &[("x-github-event", script), ("x-customer", img)],
    )
    .await;
    assert_eq!(status, 200);
    eventually("a dead letter", || {
        (backend.dead_letters() == 1).then_some(())
    })
    .await;

    let browser = Browser::start().await;
    let client = &browser.client;
    sign_in(client, &admin, ADMIN_TOKEN).await;
    wait_text(client, "h1", "Overview").await;
    client
        .goto(&format!("{admin}/console/dead-letters?source=shop"))
        .await
        .expect("dead letters");
    // Open the headers and the body so their text is visible.
    client
        .execute(
            "document.querySelectorAll('details').forEach(d => d.open = true); return 0;",
            vec![],
        )
        .await
        .expect("open details");
    let entry = wait_text(client, "main", "evt_<b>x</b>").await;
    assert!(entry.contains(script), "the type as text: {entry}");
    assert!(entry.contains(img), "the header as text: {entry}");
    assert!(
        entry.contains("window.pwned=1"),
        "the body as text: {entry}"
    );

    let title = client.title().await.expect("title");
    assert_eq!(title, "Dead letters · hookgate");
    let pwned = client
        .execute("return typeof window.pwned;", vec![])
        .await
        .expect("pwned");
    assert_eq!(pwned, Value::String("undefined".into()));
    assert!(
        client.get_alert_text().await.is_err(),
        "no alert was opened"
    );
    // No element the values could have made.
    let made = client
        .execute(
            "return document.querySelectorAll('main script, main img, main b').length;",
            vec![],
        )
        .await
        .expect("count");
    assert_eq!(made, Value::from(0));
    for url in resources(client).await {
        assert!(url.starts_with(&admin), "a resource from elsewhere: {url}");
    }

    // The event's own page, reached by searching for its id.
    client
        .goto(&format!("{admin}/console/events"))
        .await
        .expect("events");
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("input[name=id]"))
        .await
        .expect("the Event id field")
        .send_keys("evt_<b>x</b>")
        .await
        .expect("type the id");
    click_button(client, "//form[contains(@class,'search')]", "Search").await;
    let facts = wait_text(client, "dl.facts", "evt_<b>x</b>").await;
    assert!(facts.contains(script), "the type as text: {facts}");
    assert_eq!(client.title().await.expect("title"), "Event · hookgate");
    let pwned = client
        .execute("return typeof window.pwned;", vec![])
        .await
        .expect("pwned");
    assert_eq!(pwned, Value::String("undefined".into()));
    assert!(
        client.get_alert_text().await.is_err(),
        "no alert was opened"
    );
    browser.close().await;
}

/// "Pause delivery" on the overview holds a queue source's events (the
/// app gets none, the page says who paused it and why), "Resume delivery"
/// lets them through, each once; a forward source shows neither button.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_is_paused_and_resumed_from_the_overview() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let sources = format!("{}{}", queue_source("shop"), source("direct", ""));
    let hookgate = start(&app, &backend, &sources).await;
    let admin = hookgate.admin_url();
    let browser = Browser::start().await;
    let client = &browser.client;
    sign_in(client, &admin, ADMIN_TOKEN).await;
    client
        .goto(&format!("{admin}/console"))
        .await
        .expect("overview");
    let direct = client
        .find_all(Locator::XPath(
            "//tr[td/a[normalize-space()='direct']]//form[contains(@class,'pause')]",
        ))
        .await
        .expect("query");
    assert!(direct.is_empty(), "a forward source has no pause button");
    client
        .find(Locator::XPath(
            "//tr[td/a[normalize-space()='shop']]//input[@name='reason']",
        ))
        .await
        .expect("the reason field")
        .send_keys("billing <b>migration</b>")
        .await
        .expect("type a reason");
    click_button(
        client,
        "//tr[td/a[normalize-space()='shop']]//form[contains(@class,'pause')]",
        "Pause delivery",
    )
    .await;
    let shown = wait_text(client, "p.paused", "Paused by console").await;
    assert!(
        shown.contains("billing <b>migration</b>"),
        "shown as text: {shown}"
    );

    // Held: the events are answered, kept, and not delivered.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    for n in 0..3 {
        let id = format!("evt_held_{n}");
        let body = format!(r#"{{"id":"{id}"}}"#);
        assert_eq!(send(&hookgate, "shop", &id, &body, &[]).await, 200);
    }
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    assert!(app.seen().is_empty(), "nothing delivered while paused");
    assert_eq!(backend.queue_len("shop"), 3);

    client
        .goto(&format!("{admin}/console"))
        .await
        .expect("overview");
    click_button(
        client,
        "//tr[td/a[normalize-space()='shop']]//form[contains(@class,'resume')]",
        "Resume delivery",
    )
    .await;
    wait_text(client, "table.sources", "Pause delivery").await;
    for n in 0..3 {
        let id = format!("evt_held_{n}");
        app.wait_for(&id, 1).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(app.seen().len(), 3, "each event once");
    // The event's page says its attempt waited for the pause.
    client
        .goto(&format!("{admin}/console/events/shop/evt_held_0"))
        .await
        .expect("the event's page");
    let attempts = wait_text(client, "table.attempts", "paused").await;
    assert!(attempts.contains("Waited"), "{attempts}");
    browser.close().await;
}

#[tokio::test]
async fn an_attempt_links_to_its_trace() {
    let collector = crate::support::collector::Collector::start().await;
    let app = App::start().await;
    let backend = Backend::sqlite();
    let toml = config(&app, &backend, &source("direct", ""))
        + &format!(
            "\n[tracing]\notlp_endpoint = \"{}\"\n\
             trace_url = \"https://traces.example/explore?left=a%20b&traceId={{trace_id}}\"\n",
            collector.url()
        );
    let hookgate = Hookgate::start(&toml).await;
    let body = r#"{"id":"evt_traced"}"#;
    assert_eq!(
        send(&hookgate, "direct", "evt_traced", body, &[]).await,
        200
    );
    let server = collector
        .wait_for("the request's span", |s| {
            s.attr("hookgate.event_id") == Some("evt_traced")
        })
        .await;

    let admin = hookgate.admin_url();
    let browser = Browser::start().await;
    let client = &browser.client;
    sign_in(client, &admin, ADMIN_TOKEN).await;
    // Signed in: the overview has loaded, so no navigation is still on its way.
    wait_text(client, "table.sources", "direct").await;
    client
        .goto(&format!("{admin}/console/events/direct/evt_traced"))
        .await
        .expect("the event's page");
    wait_text(client, "table.attempts", &server.trace_id).await;
    let link = client
        .find(Locator::Css("table.attempts td.trace a"))
        .await
        .expect("a link to the trace");
    assert_eq!(
        link.text().await.expect("link text"),
        server.trace_id,
        "the attempt's trace is the request's"
    );
    let href = link.attr("href").await.expect("href").unwrap_or_default();
    assert_eq!(
        href,
        format!(
            "https://traces.example/explore?left=a%20b&traceId={}",
            server.trace_id
        )
    );
    assert_eq!(
        link.attr("rel").await.expect("rel").as_deref(),
        Some("noopener noreferrer")
    );
    browser.close().await;
}

/// The overview lists each source's `[[source.filter]]` rules with what
/// they ignored: a rule whose condition held for one event shows 1, one
/// that never held 0, and a `deliver` rule no count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_lists_each_rule_with_the_events_it_ignored() {
    let app = App::start().await;
    let backend = Backend::sqlite();
    let rules = "\
        [[source.filter]]\nname = \"keep-main\"\nfield = \"/repository/name\"\nequals = \"main\"\naction = \"deliver\"\n\
        [[source.filter]]\nname = \"sandbox-repos\"\nfield = \"/repository/name\"\nprefix = \"sandbox-\"\naction = \"ignore\"\n\
        [[source.filter]]\nname = \"bots\"\nfield = \"/sender/type\"\nequals = \"Bot\"\naction = \"ignore\"\n";
    let hookgate = start(&app, &backend, &source("gh", rules)).await;
    let ignored = r#"{"repository":{"name":"sandbox-1"},"sender":{"type":"User"}}"#;
    let kept = r#"{"repository":{"name":"main"},"sender":{"type":"Bot"}}"#;
    assert_eq!(send(&hookgate, "gh", "d-ignored", ignored, &[]).await, 200);
    assert_eq!(send(&hookgate, "gh", "d-kept", kept, &[]).await, 200);
    app.wait_for("d-kept", 1).await;
    assert_eq!(app.seen().len(), 1, "only the kept event reached the app");

    let admin = hookgate.admin_url();
    let browser = Browser::start().await;
    let client = &browser.client;
    sign_in(client, &admin, ADMIN_TOKEN).await;
    // The sign-in's redirect lands on the overview; opened again only after
    // that, so the session cookie is set.
    wait_text(client, "table.sources thead", "Source").await;
    client
        .goto(&format!("{admin}/console"))
        .await
        .expect("overview");
    let row = wait_text(client, "table.sources", "sandbox-repos (ignore) 1").await;
    assert!(row.contains("keep-main (deliver)"), "{row}");
    assert!(row.contains("bots (ignore) 0"), "{row}");
    let header = wait_text(client, "table.sources thead", "Filters").await;
    assert!(header.contains("Secrets matched"), "{header}");
    browser.close().await;
}
