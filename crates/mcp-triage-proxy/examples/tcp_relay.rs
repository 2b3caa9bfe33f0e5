//! For `bench/proxy-overhead.sh`: the floor under any proxy's cost on this machine.
//!
//! `tcp_relay --listen 127.0.0.1:0 --upstream HOST:PORT` accepts TCP connections and copies
//! bytes both ways to a new connection to the upstream (`tokio::io::copy_bidirectional`), on one
//! current-thread runtime like the proxy's default. It prints its URL (`http://ADDR`).
//!
//! It parses nothing, classifies nothing and writes no record: what it costs is the two extra
//! loopback TCP hops, the wakeups and the copies that every proxy pays. Measured beside the
//! proxy in the same run, it shows how much of the proxy's overhead is its own work and how much
//! no user-space proxy can avoid on this machine.

use tokio::net::{TcpListener, TcpStream};

const USAGE: &str = "usage: tcp_relay --listen ADDR --upstream HOST:PORT";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (mut listen, mut upstream) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--listen" => listen = args.next(),
            "--upstream" => upstream = args.next(),
            other => {
                eprintln!("tcp_relay: unknown argument {other:?}; {USAGE}");
                std::process::exit(2);
            }
        }
    }
    let (Some(listen), Some(upstream)) = (listen, upstream) else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    let listener = match TcpListener::bind(&listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("tcp_relay: cannot listen on {listen}: {e}");
            std::process::exit(1);
        }
    };
    println!("http://{}", listener.local_addr().expect("local address"));
    loop {
        let (mut inbound, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("tcp_relay: accept: {e}");
                continue;
            }
        };
        let upstream = upstream.clone();
        tokio::spawn(async move {
            let _ = inbound.set_nodelay(true);
            match TcpStream::connect(&upstream).await {
                Ok(mut outbound) => {
                    let _ = outbound.set_nodelay(true);
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
                Err(e) => eprintln!("tcp_relay: connect {upstream}: {e}"),
            }
        });
    }
}
