//! The `/metrics` endpoint: one route over HTTP/1.1, answered from the latest exposition. A
//! dependency-free server is enough for it: Prometheus sends one `GET` per scrape.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The content type of the text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The latest exposition, shared between the sampling loop and the server.
pub(crate) type Page = Arc<Mutex<String>>;

/// Answers requests on `listener` from `page`, on a thread of its own, until the process ends.
pub(crate) fn serve(listener: TcpListener, page: Page) {
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            // A client that stalls or sends garbage is dropped; the next one is served.
            let _ = answer(stream, &page);
        }
    });
}

fn answer(stream: TcpStream, page: &Page) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Read the headers to their end; a scrape has no body.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let mut words = request_line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, content_type, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => (
            "200 OK",
            CONTENT_TYPE,
            page.lock().map(|p| p.clone()).unwrap_or_default(),
        ),
        ("GET" | "HEAD", "/") => (
            "200 OK",
            "text/plain; charset=utf-8",
            "lowlat watch: the metrics are at /metrics\n".to_string(),
        ),
        ("GET" | "HEAD", _) => ("404 Not Found", "text/plain", "not found\n".to_string()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "only GET\n".to_string(),
        ),
    };
    let mut stream = reader.into_inner();
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if method != "HEAD" {
        stream.write_all(body.as_bytes())?;
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn get(addr: std::net::SocketAddr, path: &str) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    #[test]
    fn serves_the_latest_page_at_metrics_and_404_elsewhere() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let page: Page = Arc::new(Mutex::new("a 1\n".into()));
        serve(listener, page.clone());
        let first = get(addr, "/metrics");
        assert!(first.starts_with("HTTP/1.1 200 OK\r\n"), "{first}");
        assert!(
            first.contains(CONTENT_TYPE) && first.ends_with("\r\n\r\na 1\n"),
            "{first}"
        );
        *page.lock().unwrap() = "a 2\n".into();
        assert!(get(addr, "/metrics").ends_with("a 2\n"));
        assert!(get(addr, "/nope").starts_with("HTTP/1.1 404"));
    }
}
