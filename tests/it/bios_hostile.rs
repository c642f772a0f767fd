//! `lowlat bios` against a hostile BMC: a Redfish mock on 127.0.0.1 whose answers try to send
//! lowlat (and the admin's password) to another port, to walk it for ever, or to flood its
//! messages. A trap listener on a second loopback port records every connection it gets: the
//! tests prove that none reaches it.

use crate::support::lowlat;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PASSWORD: &str = "hostile-mock-secret";

/// What the mock answers for one path: a status, a body, and how long to wait first.
#[derive(Clone)]
struct Answer {
    status: u16,
    body: String,
    delay: Duration,
}

fn ok(body: Value) -> Answer {
    Answer {
        status: 200,
        body: body.to_string(),
        delay: Duration::ZERO,
    }
}

/// A mock BMC answering GET and PATCH from a fixed table, and recording each request line.
struct Mock {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Mock {
    fn start(routes: HashMap<String, Answer>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let routes = routes.clone();
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || answer(stream, &routes, &seen));
            }
        });
        Self { url, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// `lowlat bios ARGS --bmc URL`: exit code, stdout, stderr, checked for the password.
    fn bios(&self, args: &[&str]) -> (i32, String, String) {
        let mut full = vec!["bios", args[0], "--bmc", &self.url, "--user", "root"];
        full.extend(&args[1..]);
        let out = lowlat(&full)
            .env("LOWLAT_BMC_PASSWORD", PASSWORD)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD));
        (out.status.code().unwrap(), stdout, stderr)
    }
}

/// Answers one request (one per connection); what is not HTTP (a TLS handshake) gets a 400,
/// as from any plain-HTTP server.
fn answer(stream: TcpStream, routes: &HashMap<String, Answer>, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        let _ = (&stream).write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    seen.lock().unwrap().push(format!("{method} {path}"));
    let found = routes.get(&format!("{method} {path}")).cloned();
    let Answer {
        status,
        body,
        delay,
    } = found.unwrap_or(Answer {
        status: 404,
        body: json!({"error": {"message": format!("no {method} {path}")}}).to_string(),
        delay: Duration::ZERO,
    });
    std::thread::sleep(delay);
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A listener on another loopback port that records everything any client sends it.
struct Trap {
    port: u16,
    received: Arc<Mutex<Vec<u8>>>,
    connections: Arc<Mutex<usize>>,
}

impl Trap {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let (bytes, count) = (Arc::clone(&received), Arc::clone(&connections));
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                *count.lock().unwrap() += 1;
                stream
                    .set_read_timeout(Some(Duration::from_millis(500)))
                    .unwrap();
                let mut buffer = [0; 4096];
                while let Ok(n @ 1..) = stream.read(&mut buffer) {
                    let mut bytes = bytes.lock().unwrap();
                    bytes.extend_from_slice(&buffer[..n]);
                    if bytes.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        });
        Self {
            port,
            received,
            connections,
        }
    }

    /// Asserts that nobody connected, so no request and no credentials reached this port.
    fn assert_untouched(&self) {
        let received = String::from_utf8_lossy(&self.received.lock().unwrap()).into_owned();
        assert_eq!(
            *self.connections.lock().unwrap(),
            0,
            "lowlat connected to the other port and sent:\n{received}"
        );
    }
}

/// The routes of a well-formed BMC whose Systems, Bios, settings and registry are those given.
fn bmc(system: &str, settings: &str, location: &str) -> HashMap<String, Answer> {
    let mut routes = HashMap::new();
    let mut add = |path: &str, body: Value| routes.insert(format!("GET {path}"), ok(body));
    add(
        "/redfish/v1/Systems",
        json!({"Members": [{"@odata.id": system}]}),
    );
    add(
        "/redfish/v1/Systems/1",
        json!({"Id": "1", "Bios": {"@odata.id": "/redfish/v1/Systems/1/Bios"}}),
    );
    add(
        "/redfish/v1/Systems/1/Bios",
        json!({"Attributes": {"ProcTurboMode": "Enabled", "LogicalProc": "Enabled"},
               "AttributeRegistry": "BiosRegistry.v1",
               "@Redfish.Settings": {"SettingsObject": {"@odata.id": settings}}}),
    );
    add(
        "/redfish/v1/Systems/1/Bios/Settings",
        json!({"Attributes": {}}),
    );
    add(
        "/redfish/v1/Registries",
        json!({"Members": [{"@odata.id": "/redfish/v1/Registries/Bios"}]}),
    );
    add(
        "/redfish/v1/Registries/Bios",
        json!({"Id": "BiosRegistry.v1", "Location": [{"Uri": location}]}),
    );
    add(
        "/registries/bios.json",
        json!({"Id": "BiosRegistry.v1", "RegistryEntries": {"Attributes": [
            {"AttributeName": "ProcTurboMode", "Type": "Enumeration",
             "Value": [{"ValueName": "Enabled"}, {"ValueName": "Disabled"}]}]}}),
    );
    routes.insert(
        "PATCH /redfish/v1/Systems/1/Bios/Settings".to_string(),
        Answer {
            status: 204,
            body: String::new(),
            delay: Duration::ZERO,
        },
    );
    routes
}

const SYSTEM: &str = "/redfish/v1/Systems/1";
const SETTINGS: &str = "/redfish/v1/Systems/1/Bios/Settings";
const LOCATION: &str = "/registries/bios.json";

#[test]
fn the_well_formed_mock_is_read() {
    let mock = Mock::start(bmc(SYSTEM, SETTINGS, LOCATION));
    let (code, page, err) = mock.bios(&["read"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        page.contains("registry BiosRegistry.v1 (1 attributes)"),
        "{page}"
    );
}

/// a reference with user information (`@127.0.0.1:PORT/...`) made lowlat connect to PORT
/// with the admin's credentials; an absolute URL or a protocol-relative one would do the same.
#[test]
fn references_to_another_host_are_refused_and_nothing_reaches_it() {
    let trap = Trap::start();
    let port = trap.port;
    let hostile = [
        format!("@127.0.0.1:{port}/redfish/v1/Systems/1"),
        format!("http://127.0.0.1:{port}/redfish/v1/Systems/1"),
        format!("//127.0.0.1:{port}/redfish/v1/Systems/1"),
        format!("/redfish/v1/Systems/1@127.0.0.1:{port}"),
    ];
    for reference in &hostile {
        for (system, settings, location, found_in) in [
            (
                reference.as_str(),
                SETTINGS,
                LOCATION,
                "/redfish/v1/Systems",
            ),
            (
                SYSTEM,
                reference.as_str(),
                LOCATION,
                "/redfish/v1/Systems/1/Bios",
            ),
            (
                SYSTEM,
                SETTINGS,
                reference.as_str(),
                "/redfish/v1/Registries/Bios",
            ),
        ] {
            let mock = Mock::start(bmc(system, settings, location));
            for args in [
                &["read"][..],
                &["apply", "--set", "boost=off", "--journal", "/dev/null"][..],
            ] {
                let (code, _, err) = mock.bios(args);
                trap.assert_untouched();
                assert_eq!(code, 2, "{reference} in {found_in}: {args:?}\n{err}");
                assert!(
                    err.contains(&format!("{found_in}: the BMC refers to")),
                    "{err}"
                );
                assert!(err.contains("nothing was sent there"), "{err}");
                assert!(
                    !mock.requests().iter().any(|r| r.starts_with("PATCH")),
                    "{:?}",
                    mock.requests()
                );
            }
        }
    }
}

/// every registry file was fetched and kept before the one needed was looked for. Now the
/// walk stops at the first file that names the registry.
#[test]
fn the_registry_walk_stops_at_the_first_match() {
    let mut routes = bmc(SYSTEM, SETTINGS, LOCATION);
    let mut members = vec![json!({"@odata.id": "/redfish/v1/Registries/Bios"})];
    for i in 0..40 {
        let uri = format!("/redfish/v1/Registries/Other{i}");
        routes.insert(
            format!("GET {uri}"),
            ok(json!({"Id": format!("Other{i}"), "Location": [{"Uri": format!("/registries/other{i}.json")}]})),
        );
        members.push(json!({"@odata.id": uri}));
    }
    routes.insert(
        "GET /redfish/v1/Registries".to_string(),
        ok(json!({"Members": members})),
    );
    let mock = Mock::start(routes);
    let (code, page, err) = mock.bios(&["read"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains("registry BiosRegistry.v1"), "{page}");
    let requests = mock.requests();
    assert!(
        !requests.iter().any(|r| r.contains("Other")),
        "read past the registry it needed: {requests:?}"
    );
}

/// a registry list of 20,000 members was walked for minutes. Now more than 256 members
/// are refused before any is fetched.
#[test]
fn a_registry_list_too_long_is_refused_before_walking_it() {
    let mut routes = bmc(SYSTEM, SETTINGS, LOCATION);
    let members: Vec<Value> = (0..20_000)
        .map(|i| json!({"@odata.id": format!("/redfish/v1/Registries/R{i}")}))
        .collect();
    routes.insert(
        "GET /redfish/v1/Registries".to_string(),
        ok(json!({"Members": members})),
    );
    let mock = Mock::start(routes);
    let (code, _, err) = mock.bios(&["read"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/redfish/v1/Registries: lists 20000 members, more than the 256"),
        "{err}"
    );
    assert!(
        !mock.requests().iter().any(|r| r.contains("/R0")),
        "{:?}",
        mock.requests()
    );
}

/// a BMC answering each request just within --timeout kept lowlat for as long as it liked.
/// Now all the requests of one command share one deadline, four times --timeout.
#[test]
fn all_requests_share_one_deadline() {
    let mut routes = bmc(SYSTEM, SETTINGS, LOCATION);
    for answer in routes.values_mut() {
        answer.delay = Duration::from_millis(700);
    }
    let mock = Mock::start(routes);
    let started = std::time::Instant::now();
    let (code, _, err) = mock.bios(&["read", "--timeout", "1"]);
    let took = started.elapsed();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the BMC's answers took longer than 4 s in all (4 times --timeout)"),
        "{err}"
    );
    assert!(took < Duration::from_secs(6), "took {took:?}");
}

/// R-12: --timeout 9223372036854775807 panicked, --timeout 0 was taken.
#[test]
fn the_timeout_has_a_range() {
    for value in ["0", "3601", "9223372036854775807"] {
        let out = lowlat(&[
            "bios",
            "read",
            "--bmc",
            "https://127.0.0.1:9",
            "--user",
            "root",
            "--timeout",
            value,
        ])
        .env("LOWLAT_BMC_PASSWORD", PASSWORD)
        .output()
        .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        assert!(err.contains("is not in 1..=3600"), "{err}");
    }
}

/// an https URL to a plain-HTTP server was called an untrusted certificate; a redirect
/// without Location said nothing of it; a 189 KB error message was printed whole.
#[test]
fn redfish_failures_are_told_plainly() {
    let mut routes = bmc(SYSTEM, SETTINGS, LOCATION);
    let mock = Mock::start(routes.clone());
    let https = mock.url.replace("http://", "https://");
    let out = lowlat(&["bios", "read", "--bmc", &https, "--user", "root"])
        .env("LOWLAT_BMC_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("does not answer TLS on this port") && !err.contains("certificate"),
        "{err}"
    );

    routes.insert(
        "GET /redfish/v1/Systems".to_string(),
        Answer {
            status: 301,
            body: String::new(),
            delay: Duration::ZERO,
        },
    );
    let flood = "x".repeat(189_000);
    routes.insert(
        "GET /redfish/v1/Systems/1".to_string(),
        Answer {
            status: 500,
            body: json!({"error": {"message": "failed",
                "@Message.ExtendedInfo": [{"Message": flood}]}})
            .to_string(),
            delay: Duration::ZERO,
        },
    );
    let redirecting = Mock::start(routes.clone());
    let (code, _, err) = redirecting.bios(&["read"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("redirects (HTTP 301) without saying where (no Location header)"),
        "{err}"
    );

    routes.remove("GET /redfish/v1/Systems");
    routes.insert(
        "GET /redfish/v1/Systems".to_string(),
        ok(json!({"Members": [{"@odata.id": SYSTEM}]})),
    );
    let flooding = Mock::start(routes);
    let (code, _, err) = flooding.bios(&["read"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.len() < 1000, "{} bytes of error", err.len());
    assert!(err.contains("characters more)"), "{err}");
}

/// `--bmc http://` sent the password in clear without a word; `--password-file
/// /dev/zero` was read until memory ran out.
#[test]
fn plain_http_is_warned_of_and_the_password_file_is_bounded() {
    let mock = Mock::start(bmc(SYSTEM, SETTINGS, LOCATION));
    let (code, _, err) = mock.bios(&["read"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("plain HTTP sends the password unencrypted"),
        "{err}"
    );

    let out = lowlat(&[
        "bios",
        "read",
        "--bmc",
        &mock.url,
        "--user",
        "root",
        "--password-file",
        "/dev/zero",
    ])
    .timeout(Duration::from_secs(20))
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--password-file /dev/zero: no end of line in the first 4096 bytes"),
        "{err}"
    );
    assert!(mock.requests().len() > 1, "the first read reached the mock");
}
