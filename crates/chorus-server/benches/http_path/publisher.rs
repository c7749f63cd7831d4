//! A publisher's connection in the HTTP path bench: hyper's HTTP/1.1 client connection (the
//! headline: a load generator that takes as little of the shared cores as the well-kept crates
//! allow, as wrk or oha would, since the floor pays for no client at all) or reqwest (the
//! client most Rust programs would use; its row is kept beside the headline).

use std::net::SocketAddr;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// What the publishers send their requests with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// One `hyper::client::conn::http1` connection per publisher.
    Hyper,
    /// One shared `reqwest::Client` (a keep-alive connection per publisher in its pool).
    Reqwest,
}

/// One client connection to the server (a publisher's, or a consumer's for its batch acks).
pub enum Publisher {
    Hyper {
        send: SendRequest<Full<Bytes>>,
        host: String,
    },
    Reqwest {
        client: reqwest::Client,
        base: String,
    },
}

impl Publisher {
    /// A connection to the server at `addr` (opened now for hyper; reqwest's pool was warmed
    /// by the caller).
    pub async fn open(kind: Client, addr: SocketAddr, reqwest: &reqwest::Client) -> Publisher {
        match kind {
            Client::Reqwest => Publisher::Reqwest {
                client: reqwest.clone(),
                base: format!("http://{addr}"),
            },
            Client::Hyper => {
                let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
                stream.set_nodelay(true).expect("TCP_NODELAY");
                let (send, connection) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream))
                        .await
                        .expect("HTTP/1.1 handshake");
                tokio::spawn(connection);
                Publisher::Hyper {
                    send,
                    host: addr.to_string(),
                }
            }
        }
    }

    /// POSTs the JSON `body` to `path` as the holder of `bearer`; the status and the JSON answer.
    pub async fn post(&mut self, path: &str, bearer: &str, body: String) -> (u16, Value) {
        match self {
            Publisher::Reqwest { client, base } => {
                let response = client
                    .post(format!("{base}{path}"))
                    .bearer_auth(bearer)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .expect("publish request");
                let status = response.status().as_u16();
                (status, response.json().await.expect("a JSON answer"))
            }
            Publisher::Hyper { send, host } => {
                let request = hyper::Request::post(path)
                    .header("host", host.as_str())
                    .header("content-type", "application/json")
                    .header("authorization", format!("Bearer {bearer}"))
                    .body(Full::new(Bytes::from(body)))
                    .expect("a request");
                send.ready().await.expect("the connection is open");
                let response = send.send_request(request).await.expect("publish request");
                let status = response.status().as_u16();
                let answer = response
                    .into_body()
                    .collect()
                    .await
                    .expect("the answer's body")
                    .to_bytes();
                (
                    status,
                    serde_json::from_slice(&answer).expect("a JSON answer"),
                )
            }
        }
    }
}
