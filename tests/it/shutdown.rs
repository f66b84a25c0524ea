//! SIGTERM and SIGINT: stop accepting, let the request at the app finish with
//! the app's answer, exit 0.

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
