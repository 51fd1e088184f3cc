//! Hostile and careless connections against the real binary over real sockets: slow or
//! idle connections are closed after the header-read timeout, the connection cap makes
//! new connections wait (and says so in the log), and a declared body over the limit is
//! refused before it is read.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::process::ServerProcess;

fn server(extra: &[&str]) -> (ServerProcess, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("cinder-attach-conn-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = ServerProcess::start_with(
        &format!("sqlite://{}", dir.join("db.sqlite").display()),
        &dir.join("volumes"),
        extra,
    );
    (server, dir)
}

/// Seconds until the server closes `stream` (reads until EOF or reset), at most `limit`.
fn seconds_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<f64> {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buffer = [0u8; 4096];
    while started.elapsed() < limit {
        match stream.read(&mut buffer) {
            Ok(0) => return Some(started.elapsed().as_secs_f64()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return Some(started.elapsed().as_secs_f64()),
        }
    }
    None
}

fn response_head(stream: &mut TcpStream, within: Duration) -> Option<String> {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buffer = [0u8; 4096];
    match stream.read(&mut buffer) {
        Ok(n) if n > 0 => Some(String::from_utf8_lossy(&buffer[..n]).into_owned()),
        _ => None,
    }
}

const GET_ROOT: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

#[test]
fn idle_and_slow_connections_are_closed() {
    let (server, dir) = server(&["--header-read-timeout", "1"]);
    // Connected, nothing sent.
    let mut idle = TcpStream::connect(&server.addr).unwrap();
    // One header byte at a time, never finishing.
    let mut slow = TcpStream::connect(&server.addr).unwrap();
    let trickle = std::thread::spawn(move || {
        for byte in b"GET / HTTP/1.1\r\nHost: slowly-slowly-slowly"
            .iter()
            .cycle()
            .take(40)
        {
            if slow.write_all(&[*byte]).is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        seconds_until_closed(&mut slow, Duration::from_secs(1)).is_some()
    });
    // A keep-alive connection that went quiet after its first response.
    let mut quiet = TcpStream::connect(&server.addr).unwrap();
    quiet.write_all(GET_ROOT).unwrap();
    let head = response_head(&mut quiet, Duration::from_secs(5)).expect("a response");
    assert!(head.starts_with("HTTP/1.1 300"), "{head}");

    for (name, stream) in [("idle", &mut idle), ("quiet keep-alive", &mut quiet)] {
        let closed = seconds_until_closed(stream, Duration::from_secs(5));
        assert!(closed.is_some_and(|s| s < 3.0), "{name}: {closed:?}");
    }
    assert!(
        trickle.join().unwrap(),
        "the trickling connection was closed"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_connection_cap_makes_new_connections_wait() {
    let (server, dir) = server(&["--max-connections", "2", "--header-read-timeout", "30"]);
    let first = TcpStream::connect(&server.addr).unwrap();
    let _second = TcpStream::connect(&server.addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // The kernel completes the handshake, but the server does not take the connection.
    let mut third = TcpStream::connect(&server.addr).unwrap();
    third.write_all(GET_ROOT).unwrap();
    assert_eq!(
        response_head(&mut third, Duration::from_millis(700)),
        None,
        "served past the cap"
    );
    let warned = server.log.lock().unwrap().iter().any(|event| {
        event["level"] == "WARN"
            && event["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("connection limit reached"))
            && event["max_connections"] == 2
    });
    assert!(warned, "{:?}", server.log.lock().unwrap());
    drop(first);
    let head =
        response_head(&mut third, Duration::from_secs(5)).expect("served once a place is free");
    assert!(head.starts_with("HTTP/1.1 300"), "{head}");
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_oversized_declared_body_is_refused_at_once() {
    let (server, dir) = server(&["--max-body-bytes", "1024"]);
    let mut stream = TcpStream::connect(&server.addr).unwrap();
    // The headers only: a server that waits for the body would answer nothing.
    stream
        .write_all(
            b"POST /v3/p1/volumes HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin:p1\r\n\
              Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n",
        )
        .unwrap();
    let head =
        response_head(&mut stream, Duration::from_secs(3)).expect("answered before the body");
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(
        head.contains("Request body is larger than 1024 bytes."),
        "{head}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}
