//! SIGTERM and SIGINT: stop accepting, let the request at the app finish with
//! the app's answer, exit 0; a client that ignores the drain's `GOAWAY` does
//! not hold it up past `write_timeout`.

use std::time::Duration;

use crate::support::raw_h2::DeafAfterGoaway;
use crate::support::{ConfigBuilder, Reply, SourceSpec, Upstream, eventually};

#[tokio::test]
async fn sigterm_lets_the_in_flight_request_finish_then_exits_zero() {
    let upstream = Upstream::start().await;
    upstream.set_reply(Reply::status(202).body("accepted while draining"));
    let stripe = SourceSpec::stripe();
    let mut gate = ConfigBuilder::new(&upstream.url())
        .source(stripe.clone())
        .start()
        .await;
    let event = stripe.event("evt_draining", "invoice.paid");
    let public = gate.public_addr();

    upstream.hold();
    let (resp, ()) = tokio::join!(gate.send(&stripe, &event), async {
        upstream.wait_for(1).await;
        gate.sigterm();
        // New connections are refused while the held request is still at the app.
        eventually("the public listener stops accepting", || async {
            match tokio::net::TcpStream::connect(public).await {
                Err(_) => Ok(()),
                Ok(_) => Err("a new connection was accepted".to_owned()),
            }
        })
        .await;
        upstream.release();
    });

    assert_eq!(resp.status, 202, "{resp:?}");
    assert_eq!(resp.text(), "accepted while draining");
    let status = gate.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{status}\n{}", gate.describe());
    assert_eq!(upstream.count(), 1);
}

#[tokio::test]
async fn sigterm_when_idle_exits_zero() {
    let upstream = Upstream::start().await;
    let mut gate = ConfigBuilder::new(&upstream.url())
        .source(SourceSpec::stripe())
        .start()
        .await;

    gate.sigterm();
    let status = gate.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{status}\n{}", gate.describe());
}

#[tokio::test]
async fn sigint_when_idle_exits_zero() {
    let upstream = Upstream::start().await;
    let mut gate = ConfigBuilder::new(&upstream.url())
        .source(SourceSpec::stripe())
        .start()
        .await;

    gate.signal("INT");
    let status = gate.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{status}\n{}", gate.describe());
}

#[tokio::test]
async fn sigterm_does_not_wait_for_an_h2_client_that_ignores_goaway() {
    let upstream = Upstream::start().await;
    let mut gate = ConfigBuilder::new(&upstream.url())
        .server_key("write_timeout = \"1s\"")
        .source(SourceSpec::stripe())
        .start()
        .await;
    // An h2 client that reads the drain's GOAWAY and then answers nothing.
    let mut deaf = DeafAfterGoaway::connect(gate.public_addr()).await;
    gate.sigterm();
    let told = deaf.until_goaway().await;
    let status = gate.wait_exit().await;
    assert_eq!(status.code(), Some(0), "{status}\n{}", gate.describe());
    // Dropped within write_timeout (1 s) of being told, not after the 25 s
    // drain grace; the margin is generous.
    let took = told.elapsed();
    assert!(
        took < Duration::from_secs(6),
        "hookgate exited {took:?} after the GOAWAY\n{}",
        gate.describe()
    );
    drop(deaf);
}
