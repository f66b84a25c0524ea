//! `[[source.filter]]` (DESIGN §3a) on the real binary: each condition's
//! answer and what the app saw, strict JSON types, a forged event refused
//! before any rule reads it, a filtered event answered the same twice with
//! nothing stored, form bodies (Slack), the configs `check` refuses, a list
//! of 100,000 values, and `hookgate filter test`.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::support::hookgate::run_cli;
use crate::support::redis::{RedisServer, TempDir};
use crate::support::{ConfigBuilder, Event, Metrics, SourceSpec, Upstream, sha256_hex};

/// Rules for a Stripe source: one of each condition, a `deliver` first.
const STRIPE_RULES: &str = r#"
[[source.filter]]
name = "vip"
field = "/data/object/customer"
equals = "cus_vip"
action = "deliver"

[[source.filter]]
name = "test-mode"
field = "/livemode"
equals = false
action = "ignore"

[[source.filter]]
name = "sandbox"
field = "/data/object/customer"
in = ["cus_sb1", "cus_sb2"]
action = "ignore"

[[source.filter]]
name = "internal"
field = "/data/object/email"
prefix = "qa+"
action = "ignore"

[[source.filter]]
name = "skip-flag"
field = "/data/object/metadata/skip"
exists = true
action = "ignore"

[[source.filter]]
name = "currencies"
field = "/data/object/currency"
not_in = ["usd", "eur"]
action = "ignore"
"#;

fn stripe_event(id: &str, livemode: Value, object: Value) -> Event {
    Event::json(
        id,
        Some("invoice.paid"),
        json!({"id": id, "type": "invoice.paid", "livemode": livemode, "data": {"object": object}}),
    )
}

fn filtered_stripe() -> SourceSpec {
    let mut stripe = SourceSpec::stripe();
    stripe.extra_toml += STRIPE_RULES;
    stripe
}

fn delivered_ids(upstream: &Upstream) -> Vec<String> {
    upstream
        .requests()
        .iter()
        .map(|r| r.header("x-verified-event-id"))
        .collect()
}

/// Every key and hash field in `redis` that names `id`.
fn stored_mentions(redis: &RedisServer, id: &str) -> Vec<String> {
    let mut conn = redis.client();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).expect("KEYS");
    let mut found = Vec::new();
    for key in keys {
        if key.contains(id) {
            found.push(key.clone());
        }
        let kind: String = redis::cmd("TYPE").arg(&key).query(&mut conn).expect("TYPE");
        let text = match kind.as_str() {
            "hash" => {
                let all: Vec<Vec<u8>> = redis::cmd("HGETALL")
                    .arg(&key)
                    .query(&mut conn)
                    .expect("HGETALL");
                all.concat()
            }
            "zset" => {
                let all: Vec<Vec<u8>> = redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .query(&mut conn)
                    .expect("ZRANGE");
                all.concat()
            }
            "string" => redis::cmd("GET")
                .arg(&key)
                .query::<Vec<u8>>(&mut conn)
                .expect("GET"),
            _ => Vec::new(),
        };
        if String::from_utf8_lossy(&text).contains(id) {
            found.push(format!("{key} ({kind})"));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_condition_decides_by_json_type_and_value_and_an_ignored_event_leaves_nothing() {
    let redis = RedisServer::start();
    let upstream = Upstream::start().await;
    let stripe = filtered_stripe();
    let gate = ConfigBuilder::new(&upstream.url())
        .redis(&redis.url())
        .source(stripe.clone())
        .start()
        .await;
    let base = json!({"customer": "cus_1", "currency": "usd", "email": "a@example.com"});
    let with = |k: &str, v: Value| {
        let mut o = base.clone();
        o[k] = v;
        o
    };
    let without = |k: &str| {
        let mut o = base.clone();
        o.as_object_mut().expect("object").remove(k);
        o
    };
    // (event, the rule that ignores it, or None when the app gets it)
    let cases: Vec<(Event, Option<&str>)> = vec![
        (stripe_event("evt_plain", json!(true), base.clone()), None),
        (
            stripe_event("evt_test_mode", json!(false), base.clone()),
            Some("test-mode"),
        ),
        // "false" the string is not false the boolean.
        (
            stripe_event("evt_string_false", json!("false"), base.clone()),
            None,
        ),
        // 0 is not false either.
        (stripe_event("evt_zero", json!(0), base.clone()), None),
        // The first rule that holds decides: a VIP in test mode is delivered.
        (
            stripe_event("evt_vip", json!(false), with("customer", json!("cus_vip"))),
            None,
        ),
        (
            stripe_event(
                "evt_sandbox",
                json!(true),
                with("customer", json!("cus_sb2")),
            ),
            Some("sandbox"),
        ),
        // A number is not the string of its digits.
        (
            stripe_event(
                "evt_numeric_customer",
                json!(true),
                with("customer", json!(2)),
            ),
            None,
        ),
        (
            stripe_event(
                "evt_internal",
                json!(true),
                with("email", json!("qa+1@example.com")),
            ),
            Some("internal"),
        ),
        (
            stripe_event(
                "evt_prefix_inside",
                json!(true),
                with("email", json!("x-qa+1@example.com")),
            ),
            None,
        ),
        (
            stripe_event(
                "evt_skip",
                json!(true),
                with("metadata", json!({"skip": null})),
            ),
            Some("skip-flag"),
        ),
        (
            stripe_event("evt_gbp", json!(true), with("currency", json!("gbp"))),
            Some("currencies"),
        ),
        // An absent field meets not_in.
        (
            stripe_event("evt_no_currency", json!(true), without("currency")),
            Some("currencies"),
        ),
    ];
    for (event, rule) in &cases {
        let resp = gate.send(&stripe, event).await;
        match rule {
            Some(_) => resp.assert_json(200, json!({"ignored": "filtered"})),
            None => resp.assert_app_ok(),
        }
    }
    let want: Vec<String> = cases
        .iter()
        .filter(|(_, rule)| rule.is_none())
        .map(|(e, _)| e.id.clone())
        .collect();
    assert_eq!(delivered_ids(&upstream), want, "what the app saw");

    // Sent again, a filtered event gets the same answer (no nonce was taken)
    // and a delivered one is a duplicate.
    gate.send(&stripe, &cases[1].0)
        .await
        .assert_json(200, json!({"ignored": "filtered"}));
    gate.send(&stripe, &cases[0].0)
        .await
        .assert_duplicate("evt_plain");

    // A forged copy naming a filtered customer is refused before any rule reads it.
    let forged = stripe_event(
        "evt_forged_sandbox",
        json!(true),
        with("customer", json!("cus_sb1")),
    );
    let resp = gate
        .post(
            &stripe.path,
            &stripe.forged_headers(&forged),
            forged.body.clone(),
        )
        .await;
    resp.assert_error(400, "invalid_signature");
    assert_eq!(
        delivered_ids(&upstream),
        want,
        "nothing more reached the app"
    );

    // Counted per rule and as the "filtered" outcome.
    let metrics = Metrics::parse(&gate.admin_get("/metrics").await.text());
    for (rule, n) in [
        ("test-mode", 2.0),
        ("sandbox", 1.0),
        ("internal", 1.0),
        ("skip-flag", 1.0),
        ("currencies", 2.0),
    ] {
        assert_eq!(
            metrics.get(
                "hookgate_filtered_total",
                &[("source", "stripe"), ("rule", rule)]
            ),
            Some(n),
            "hookgate_filtered_total for {rule}"
        );
    }
    assert_eq!(
        metrics.get(
            "hookgate_requests_total",
            &[("source", "stripe"), ("outcome", "filtered")]
        ),
        Some(7.0)
    );
    let line = gate
        .wait_for_log("the filtered request's log line", |l| {
            l["event_id"] == "evt_sandbox" && l["outcome"] == "filtered"
        })
        .await;
    assert_eq!(line["rule"], "sandbox");

    // Nothing of a filtered event is in the store (no nonce, no trail
    // record); a delivered event is, so the look could find one.
    tokio::task::block_in_place(|| {
        assert!(
            !stored_mentions(&redis, "evt_plain").is_empty(),
            "a delivered event is in the store"
        );
        for (event, rule) in &cases {
            if rule.is_some() {
                let found = stored_mentions(&redis, &event.id);
                assert!(found.is_empty(), "{} stored: {found:?}", event.id);
            }
        }
    });
}

/// Slack posts slash commands and interactivity as forms: the first
/// segment names the form field, and the rest goes into a JSON value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn form_bodies_are_read_field_first() {
    let upstream = Upstream::start().await;
    let mut slack = SourceSpec::slack();
    slack.extra_toml += r#"
[[source.filter]]
name = "test-workspace-actions"
field = "/payload/team/id"
equals = "T_TEST"
action = "ignore"

[[source.filter]]
name = "test-workspace-commands"
field = "/team_id"
in = ["T_TEST"]
action = "ignore"
"#;
    let gate = ConfigBuilder::new(&upstream.url())
        .source(slack.clone())
        .start()
        .await;
    let form = |body: &str| {
        Event::raw(&sha256_hex(body.as_bytes()), None, body.as_bytes().to_vec())
            .header("Content-Type", "application/x-www-form-urlencoded")
    };
    let payload = |team: &str| {
        let inner = json!({"type": "block_actions", "team": {"id": team}}).to_string();
        let mut body = String::from("payload=");
        for b in inner.bytes() {
            if b.is_ascii_alphanumeric() {
                body.push(char::from(b));
            } else {
                let _ = write!(body, "%{b:02X}");
            }
        }
        body
    };
    let cases = [
        (form(&payload("T_TEST")), true),
        (form(&payload("T_PROD")), false),
        (
            form("token=t&team_id=T_TEST&command=%2Fdeploy&text=now"),
            true,
        ),
        (
            form("token=t&team_id=T_PROD&command=%2Fdeploy&text=now"),
            false,
        ),
        // A JSON body is read as JSON: /team_id is a string field there too.
        (
            slack.event("Ev_json_test", "app_mention"),
            false, // team_id "T1"
        ),
    ];
    for (event, ignored) in &cases {
        let resp = gate.send(&slack, event).await;
        if *ignored {
            resp.assert_json(200, json!({"ignored": "filtered"}));
        } else {
            resp.assert_app_ok();
        }
    }
    let want: Vec<String> = cases
        .iter()
        .filter(|(_, ignored)| !ignored)
        .map(|(e, _)| e.id.clone())
        .collect();
    assert_eq!(delivered_ids(&upstream), want);
    // The content type is not signed and does not decide how the body is
    // read: the same signed form sent as JSON meets the same rule.
    let replayed = form("token=t&team_id=T_TEST&command=%2Fdeploy&text=later")
        .header("Content-Type", "application/json");
    gate.send(&slack, &replayed)
        .await
        .assert_json(200, json!({"ignored": "filtered"}));
}

/// A config with `rules` under one Stripe source, written to a file.
fn config_file(dir: &TempDir, rules: &str) -> std::path::PathBuf {
    let mut stripe = SourceSpec::stripe();
    stripe.extra_toml += rules;
    let text = ConfigBuilder::new("http://127.0.0.1:9")
        .source(stripe)
        .toml();
    let path = dir.path().join("hookgate.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// The line of the first line of `path` holding `needle`, 1-based.
fn line_of(path: &std::path::Path, needle: &str) -> usize {
    let text = std::fs::read_to_string(path).expect("read config");
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("{needle:?} not in the config"))
}

#[tokio::test]
async fn check_refuses_each_malformed_rule_with_its_line_and_field() {
    let dir = TempDir::new("filters-check");
    let cases: [(&str, &str, &str, &str); 6] = [
        (
            "[[source.filter]]\nname = \"none\"\nfield = \"/a\"\naction = \"ignore\"\n",
            "name = \"none\"",
            "source[stripe].filter[0]",
            "no condition",
        ),
        (
            "[[source.filter]]\nname = \"two\"\nfield = \"/a\"\nequals = 1\nprefix = \"x\"\naction = \"ignore\"\n",
            "prefix = \"x\"",
            "source[stripe].filter[0].prefix",
            "2 conditions",
        ),
        (
            "[[source.filter]]\nname = \"ptr\"\nfield = \"a/b\"\nexists = true\naction = \"ignore\"\n",
            "field = \"a/b\"",
            "source[stripe].filter[0].field",
            "not a JSON pointer",
        ),
        (
            "[[source.filter]]\nname = \"act\"\nfield = \"/a\"\nexists = true\naction = \"drop\"\n",
            "action = \"drop\"",
            "source[stripe].filter[0].action",
            "unknown value \"drop\"",
        ),
        (
            "[[source.filter]]\nname = \"same\"\nfield = \"/a\"\nexists = true\naction = \"ignore\"\n\
             [[source.filter]]\nname = \"same\"\nfield = \"/b\"\nexists = true\naction = \"ignore\"\n",
            "field = \"/b\"",
            "source[stripe].filter[1].name",
            "duplicate rule name \"same\"",
        ),
        (
            "[[source.filter]]\nname = \"date\"\nfield = \"/a\"\nequals = 2026-12-06\naction = \"ignore\"\n",
            "equals = 2026-12-06",
            "source[stripe].filter[0].equals",
            "TOML date",
        ),
    ];
    for (rules, at, field, message) in cases {
        let path = config_file(&dir, rules);
        let (status, stdout, stderr) =
            run_cli(&["check", "--config", path.to_str().expect("utf-8 path")]).await;
        assert_eq!(status.code(), Some(1), "{rules}\n{stdout}{stderr}");
        let mut line = line_of(&path, at);
        if field.ends_with(".name") {
            // A duplicate name is reported at the second rule's name.
            line -= 1;
        }
        if message == "no condition" {
            line = line_of(&path, "[[source.filter]]");
        }
        let want = format!("{}:{line}: {field}: ", path.display());
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&want) && l.contains(message)),
            "expected a line starting {want:?} and naming {message:?}:\n{stderr}"
        );
    }
    // 65 rules are refused.
    let mut many = String::new();
    for i in 0..65 {
        let _ = write!(
            many,
            "[[source.filter]]\nname = \"r{i}\"\nfield = \"/a\"\nexists = true\naction = \"ignore\"\n"
        );
    }
    let path = config_file(&dir, &many);
    let (status, _, stderr) =
        run_cli(&["check", "--config", path.to_str().expect("utf-8 path")]).await;
    assert_eq!(status.code(), Some(1));
    assert!(
        stderr.contains("65 rules; a source takes at most 64"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_of_a_hundred_thousand_customers_is_checked_and_served() {
    let dir = TempDir::new("filters-large");
    let mut list = String::from(
        "[[source.filter]]\nname = \"sandbox\"\nfield = \"/data/object/customer\"\naction = \"ignore\"\nin = [",
    );
    for i in 0..100_000 {
        let _ = write!(list, "\"cus_{i:06}\",");
    }
    list.push_str("]\n");
    let path = config_file(&dir, &list);
    let (status, stdout, stderr) =
        run_cli(&["check", "--config", path.to_str().expect("utf-8 path")]).await;
    assert!(status.success(), "{stdout}{stderr}");

    let upstream = Upstream::start().await;
    let mut stripe = SourceSpec::stripe();
    stripe.extra_toml += &list;
    let gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let listed = stripe_event("evt_listed", json!(true), json!({"customer": "cus_099999"}));
    gate.send(&stripe, &listed)
        .await
        .assert_json(200, json!({"ignored": "filtered"}));
    let first = stripe_event("evt_first", json!(true), json!({"customer": "cus_000000"}));
    gate.send(&stripe, &first)
        .await
        .assert_json(200, json!({"ignored": "filtered"}));
    let other = stripe_event(
        "evt_unlisted",
        json!(true),
        json!({"customer": "cus_100000"}),
    );
    gate.send(&stripe, &other).await.assert_app_ok();
    assert_eq!(delivered_ids(&upstream), vec!["evt_unlisted"]);
}

#[tokio::test]
async fn filter_test_says_which_rule_decides_and_the_answer() {
    let dir = TempDir::new("filters-cli");
    let path = config_file(&dir, STRIPE_RULES);
    let config = path.to_str().expect("utf-8 path");
    let body = dir.path().join("evt.json");
    let run = |body_json: Value| {
        let body = body.clone();
        async move {
            std::fs::write(&body, body_json.to_string()).expect("write body");
            run_cli(&[
                "filter",
                "test",
                "--config",
                config,
                "--source",
                "stripe",
                "--body-file",
                body.to_str().expect("utf-8 path"),
            ])
            .await
        }
    };
    let (status, stdout, stderr) = run(json!({
        "id": "evt_1", "livemode": false,
        "data": {"object": {"customer": "cus_1", "currency": "usd"}}
    }))
    .await;
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains("rule 1 \"vip\": /data/object/customer equals \"cus_1\": does not hold"),
        "{stdout}"
    );
    assert!(
        stdout.contains("rule 2 \"test-mode\": /livemode equals false: holds: ignores (decides)"),
        "{stdout}"
    );
    assert!(stdout.contains("rule 3 \"sandbox\""), "{stdout}");
    assert!(stdout.contains("not tried"), "{stdout}");
    assert!(
        stdout.contains("answer: 200 {\"ignored\":\"filtered\"} (rule \"test-mode\")"),
        "{stdout}"
    );
    let (status, stdout, _) = run(json!({
        "id": "evt_2", "livemode": true,
        "data": {"object": {"customer": "cus_1", "currency": "usd"}}
    }))
    .await;
    assert!(status.success());
    assert!(
        stdout.contains("answer: delivered (no rule holds): forwarded"),
        "{stdout}"
    );
    // An unknown source is a clear error.
    let (status, _, stderr) = run_cli(&[
        "filter",
        "test",
        "--config",
        config,
        "--source",
        "nope",
        "--body-file",
        body.to_str().expect("utf-8 path"),
    ])
    .await;
    assert_eq!(status.code(), Some(1));
    assert!(stderr.contains("no source named \"nope\""), "{stderr}");
}

/// A reload applies new rules like any other key: an event the app took
/// before the reload is, sent afresh under a new id after it, ignored.
#[tokio::test]
async fn a_reload_applies_new_rules() {
    let upstream = Upstream::start().await;
    let stripe = SourceSpec::stripe();
    let mut gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    gate.send(
        &stripe,
        &stripe_event("evt_before", json!(false), json!({})),
    )
    .await
    .assert_app_ok();
    let mut filtered = SourceSpec::stripe();
    filtered.extra_toml += STRIPE_RULES;
    gate.rewrite_config(&ConfigBuilder::new(&upstream.url()).source(filtered).toml());
    gate.signal("HUP");
    let after = stripe_event("evt_after", json!(false), json!({}));
    let resp = crate::support::eventually("the new rules applied", || async {
        let resp = gate.send(&stripe, &after).await;
        if resp.text().contains("filtered") {
            Ok(resp)
        } else {
            Err(format!("{} {}", resp.status, resp.text()))
        }
    })
    .await;
    resp.assert_json(200, json!({"ignored": "filtered"}));
    assert_eq!(delivered_ids(&upstream), vec!["evt_before"]);
}
