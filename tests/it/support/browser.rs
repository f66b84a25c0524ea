//! A real headless chromium, driven over WebDriver by `chromedriver`.
//!
//! [`Browser::start`] runs `chromedriver` on a free loopback port, waits
//! (bounded) until it answers `/status`, and opens a session of headless
//! chromium (`--headless=new --no-sandbox --disable-gpu`). The driver
//! process is killed when the value is dropped. Both programs come from
//! Debian's `chromium` and `chromium-driver` packages (`.ci/test` installs
//! them); a test fails with that advice when they are missing.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

use super::WAIT;

const CHROMEDRIVER: &str = "chromedriver";
const CHROMIUM: &str = "chromium";

pub struct Browser {
    pub client: Client,
    driver: Child,
}

fn find(program: &str) -> String {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    });
    match found {
        Some(path) => path.to_string_lossy().into_owned(),
        None => panic!(
            "{program} not found on PATH: the console tests drive a real browser; \
             install Debian's chromium and chromium-driver \
             (sudo apt-get install -y chromium chromium-driver), as .ci/test does"
        ),
    }
}

impl Browser {
    pub async fn start() -> Browser {
        let chromium = find(CHROMIUM);
        let driver_path = find(CHROMEDRIVER);
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").expect("free port");
            listener.local_addr().expect("port").port()
        };
        let driver = Command::new(driver_path)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let mut browser_driver = Some(driver);
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if super::try_http(
                http::Method::GET,
                &format!("{url}/status"),
                &[],
                bytes::Bytes::new(),
            )
            .await
            .is_ok_and(|r| r.status == 200)
            {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                if let Some(mut d) = browser_driver.take() {
                    let _ = d.kill();
                    let _ = d.wait();
                }
                panic!("chromedriver did not answer on {url} within {WAIT:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let driver = browser_driver.take().expect("driver");
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--window-size=1200,900", "--disable-dev-shm-usage",
                         "--no-first-run", "--disable-extensions"],
            }),
        );
        let client = tokio::time::timeout(
            WAIT,
            ClientBuilder::new(HttpConnector::new())
                .capabilities(capabilities)
                .connect(&url),
        )
        .await
        .unwrap_or_else(|_| panic!("no chromium session within {WAIT:?}"))
        .unwrap_or_else(|e| panic!("chromium session: {e}"));
        Browser { client, driver }
    }
}

impl Browser {
    /// Ends the session, which closes chromium.
    pub async fn close(self) {
        let _ = tokio::time::timeout(WAIT, self.client.clone().close()).await;
    }
}

impl Drop for Browser {
    /// Stops chromedriver with SIGTERM first (it closes the chromium it
    /// started), then SIGKILL if it is still there after a moment.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.driver.id().to_string())
            .status();
        for _ in 0..50 {
            if matches!(self.driver.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
