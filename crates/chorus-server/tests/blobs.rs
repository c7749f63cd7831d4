//! Media that lasts, over real HTTP: inline images and audio and (when configured) remote ones
//! are kept in the blob store beside the database and served at a stable path.

mod common;

use axum::http::header;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{ADMIN, ALICE, BOB, TestServer, client, config, db, get_json, publish};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// A 1×1 PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

fn image_message(id: &str, url: &str) -> Value {
    json!({
        "role": "user", "id": id, "name": "alice", "recipient": "bob",
        "metadata": {"session_id": "conv-media"},
        "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image_url", "image_url": {"url": url, "detail": "low"}}
        ]
    })
}

fn expected_path(bytes: &[u8], ext: &str) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("/v1/blobs/sha256-{hex}.{ext}")
}

/// The image URL of each stored message of the test conversation, in order.
async fn stored_urls(server: &TestServer) -> Vec<String> {
    let timeline: Value =
        get_json(server, "/v1/conversations/conv-media/messages", Some(ADMIN)).await;
    timeline["items"]
        .as_array()
        .expect("array")
        .iter()
        .map(|e| {
            e["message"]["content"][1]["image_url"]["url"]
                .as_str()
                .expect("url")
                .to_owned()
        })
        .collect()
}

fn blob_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("chorus-blobs"))
        .expect("the blob folder beside chorus.db")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn inline_images_are_kept_once_and_served() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &config(30)).await;
    let png = STANDARD.decode(PNG_B64).unwrap();
    let data_url = format!("data:image/png;base64,{PNG_B64}");
    for id in ["img-1", "img-2"] {
        let r = publish(&server, ALICE, &image_message(id, &data_url)).await;
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    }
    let path = expected_path(&png, "png");
    assert_eq!(stored_urls(&server).await, vec![path.clone(), path.clone()]);
    assert_eq!(
        blob_files(dir.path()),
        vec![path.trim_start_matches("/v1/blobs/").to_owned()]
    );

    let mut inbox = common::SseReader::open(&server, "bob", BOB, None).await;
    let delivered = inbox.next().await.json();
    assert_eq!(
        delivered["message"]["content"][1]["image_url"]["url"],
        path.as_str()
    );
    assert_eq!(
        delivered["message"]["content"][1]["image_url"]["detail"],
        "low"
    );
    drop(inbox);

    for token in [ADMIN, BOB] {
        let r = client()
            .get(server.url(&path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "image/png");
        assert_eq!(r.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(r.bytes().await.unwrap().as_ref(), png.as_slice());
    }
    let r = client().get(server.url(&path)).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = client()
        .get(server.url(&format!("/v1/blobs/sha256-{}.png", "0".repeat(64))))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = client()
        .get(server.url("/v1/blobs/..%2Fchorus.db"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    server.stop().await;
}

#[tokio::test]
async fn oversized_media_is_refused_and_nothing_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(30);
    cfg.media.max_blob_bytes = 32;
    let server = TestServer::start(&db(dir.path()), &cfg).await;
    let r = publish(
        &server,
        ALICE,
        &image_message("big-1", &format!("data:image/png;base64,{PNG_B64}")),
    )
    .await;
    assert_eq!(r.status(), 413);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "media_too_large");
    assert_eq!(body["issues"][0]["pointer"], "/content/1/image_url/url");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("limit of 32 bytes"),
        "{body}"
    );
    assert!(stored_urls(&server).await.is_empty());
    assert!(blob_files(dir.path()).is_empty());
    server.stop().await;
}

const WAV: &[u8] = b"RIFF\x24\x00\x00\x00WAVEfmt fake clip";

/// A local "bucket" that serves an image (at the URL returned), a WAV clip (`clip.wav`) and a
/// PDF (`doc.pdf`) at presigned-looking URLs until it is stopped.
async fn bucket(png: Vec<u8>) -> (String, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new()
        .route(
            "/bucket/cat.png",
            axum::routing::get(move || {
                let png = png.clone();
                async move { ([(header::CONTENT_TYPE, "image/png")], png) }
            }),
        )
        .route(
            "/bucket/clip.wav",
            axum::routing::get(|| async { ([(header::CONTENT_TYPE, "audio/wav")], WAV) }),
        )
        .route(
            "/bucket/doc.pdf",
            axum::routing::get(|| async { ([(header::CONTENT_TYPE, "application/pdf")], "%PDF-") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (
        format!("http://{addr}/bucket/cat.png?X-Amz-Expires=60&sig=abc"),
        task,
    )
}

#[tokio::test]
async fn remote_media_outlives_its_expiring_url() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(30);
    cfg.media.fetch_remote = true;
    cfg.media.fetch_timeout_secs = 5;
    let server = TestServer::start(&db(dir.path()), &cfg).await;
    let png = STANDARD.decode(PNG_B64).unwrap();
    let (url, bucket_task) = bucket(png.clone()).await;
    let r = publish(&server, ALICE, &image_message("remote-1", &url)).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let files = json!({
        "role": "user", "id": "remote-files", "name": "alice", "recipient": "bob",
        "metadata": {"session_id": "conv-files"},
        "content": [
            {"type": "file", "file": {"url": url.replace("cat.png", "clip.wav"), "filename": "clip.wav"}},
            {"type": "file", "file": {"url": url.replace("cat.png", "doc.pdf"), "filename": "doc.pdf"}}
        ]
    });
    let r = publish(&server, ALICE, &files).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    bucket_task.abort();
    let _ = bucket_task.await;
    let gone = client().get(&url).send().await;
    assert!(gone.is_err(), "the bucket no longer serves the image");

    let path = expected_path(&png, "png");
    assert_eq!(stored_urls(&server).await, vec![path.clone()]);
    let r = client()
        .get(server.url(&path))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()[header::CONTENT_TYPE], "image/png");
    assert_eq!(r.bytes().await.unwrap().as_ref(), png.as_slice());

    let timeline: Value = get_json(
        &server,
        "/v1/conversations/conv-files/messages",
        Some(ADMIN),
    )
    .await;
    let content = &timeline["items"][0]["message"]["content"];
    let clip = content[0]["file"]["url"].as_str().unwrap();
    assert_eq!(clip, expected_path(WAV, "wav"), "remote audio is kept");
    let r = client()
        .get(server.url(clip))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()[header::CONTENT_TYPE], "audio/wav");
    assert_eq!(r.bytes().await.unwrap().as_ref(), WAV);
    assert_eq!(
        content[1]["file"]["url"],
        url.replace("cat.png", "doc.pdf"),
        "a remote document that is not media stays as given"
    );

    let r = publish(&server, ALICE, &image_message("remote-2", &url)).await;
    assert_eq!(
        r.status(),
        422,
        "an image that cannot be fetched is refused, not lost silently"
    );
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "media_unavailable");
    assert_eq!(body["issues"][0]["pointer"], "/content/1/image_url/url");
    server.stop().await;
}

#[tokio::test]
async fn remote_urls_stay_as_given_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &config(30)).await;
    let (url, bucket_task) = bucket(STANDARD.decode(PNG_B64).unwrap()).await;
    let r = publish(&server, ALICE, &image_message("remote-3", &url)).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    assert_eq!(stored_urls(&server).await, vec![url]);
    assert!(blob_files(dir.path()).is_empty());
    bucket_task.abort();
    server.stop().await;
}

#[tokio::test]
async fn a_refused_message_writes_no_media() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &config(30)).await;
    let url = format!("data:image/png;base64,{PNG_B64}");
    // Invalid (a tool message without its call id) with 50 images: refused, nothing written.
    let mut invalid = image_message("bad-media", &url);
    invalid["role"] = "tool".into();
    let parts = invalid["content"].as_array_mut().unwrap();
    for _ in 0..49 {
        parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
    }
    let r = publish(&server, ALICE, &invalid).await;
    assert_eq!(r.status(), 422, "{}", r.text().await.unwrap());
    // Routing keys missing: refused too, nothing written.
    let mut unroutable = image_message("no-recipient", &url);
    unroutable.as_object_mut().unwrap().remove("recipient");
    assert_eq!(publish(&server, ALICE, &unroutable).await.status(), 422);
    let written = std::fs::read_dir(dir.path().join("chorus-blobs"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(written, 0, "no blob file for refused messages");
    // The same image in a valid message is kept.
    let r = publish(&server, ALICE, &image_message("good-media", &url)).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    assert_eq!(blob_files(dir.path()).len(), 1);
    let kept = blob_files(dir.path());

    // Refused by the store after the media was read: other content under a stored id (409),
    // with a new image and the kept one; the new one is taken back, the shared one stays.
    let other = format!(
        "data:image/png;base64,{}",
        STANDARD.encode(b"another image")
    );
    // The same new image twice in one document is written once, and taken back as well.
    for (second, what) in [
        (&url, "a new image and the kept one"),
        (&other, "the new image twice"),
    ] {
        let mut conflicting = image_message("good-media", &other);
        conflicting["content"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "image_url", "image_url": {"url": second}}));
        let r = publish(&server, ALICE, &conflicting).await;
        assert_eq!(r.status(), 409, "{what}: {}", r.text().await.unwrap());
        assert_eq!(
            blob_files(dir.path()),
            kept,
            "{what}: no blob left, none taken"
        );
    }
    // The image refused twice is kept when a message carrying it is taken.
    let r = publish(&server, ALICE, &image_message("other-media", &other)).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    assert_eq!(blob_files(dir.path()).len(), 2);
    server.stop().await;
}

/// One message with more images than `[media] max_items_per_message` (100 by default) is
/// refused before any is decoded or written: 422 `too_many_media` at the first piece past the
/// cap, and no file in the blob folder (before, 3,000 distinct 1×1 PNGs in a 478 KB message
/// wrote 3,000 files). As many as the cap are kept.
#[tokio::test]
async fn a_message_carries_at_most_its_cap_of_media() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.max_body_bytes = 4 * 1024 * 1024;
    let server = TestServer::start(&db(dir.path()), &config).await;
    let png = STANDARD.decode(PNG_B64).unwrap();
    // Distinct pieces: the same picture with a different trailing byte each.
    let images = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| {
                let mut bytes = png.clone();
                bytes.extend_from_slice(&(i as u32).to_le_bytes());
                let url = format!("data:image/png;base64,{}", STANDARD.encode(&bytes));
                json!({"type": "image_url", "image_url": {"url": url}})
            })
            .collect()
    };
    let message = |id: &str, n: usize| json!({"role": "user", "id": id, "name": "alice", "recipient": "bob", "content": images(n)});
    let refused = publish(&server, ALICE, &message("m-3000", 3000)).await;
    let status = refused.status();
    let body: Value = refused.json().await.unwrap();
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"], "too_many_media", "{body}");
    assert_eq!(body["issues"][0]["pointer"], "/content/100/image_url/url");
    assert!(blob_files(dir.path()).is_empty(), "nothing written");

    let kept = publish(&server, ALICE, &message("m-100", 100)).await;
    assert_eq!(kept.status(), 201);
    assert_eq!(blob_files(dir.path()).len(), 100);
    server.stop().await;
}

/// `[media] max_new_blobs_per_minute`: the pieces of media the store does not hold yet are
/// counted per agent over a minute, all its messages together. Past the cap a message is
/// refused (429 `too_many_new_blobs`, `Retry-After`, the pointer of its first piece) with no
/// file written; pieces the store already holds cost nothing, and each agent has its own
/// minute. (Before, an agent could make the hub write 100 files a message as fast as its
/// publish rate allowed.)
#[tokio::test]
async fn new_blobs_are_capped_per_agent_per_minute() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.max_body_bytes = 4 * 1024 * 1024;
    config.media.max_new_blobs_per_minute = 150;
    let server = TestServer::start(&db(dir.path()), &config).await;
    let png = STANDARD.decode(PNG_B64).unwrap();
    // Distinct pieces: the same picture with a different trailing number each.
    let images = |from: u32, n: u32| -> Vec<Value> {
        (from..from + n)
            .map(|i| {
                let mut bytes = png.clone();
                bytes.extend_from_slice(&i.to_le_bytes());
                let url = format!("data:image/png;base64,{}", STANDARD.encode(&bytes));
                json!({"type": "image_url", "image_url": {"url": url}})
            })
            .collect()
    };
    let message = |id: &str, from: &str, to: &str, content: Vec<Value>| json!({"role": "user", "id": id, "name": from, "recipient": to, "content": content});
    let first = publish(
        &server,
        ALICE,
        &message("m-1", "alice", "bob", images(0, 100)),
    )
    .await;
    assert_eq!(first.status(), 201);
    assert_eq!(blob_files(dir.path()).len(), 100);

    // 100 more new ones: 50 are left of alice's minute. (The bucket refills at 2.5 a second, so
    // each refusal below asks for 50 more than is left: it holds unless the steps take 20 s.)
    let refused = publish(
        &server,
        ALICE,
        &message("m-2", "alice", "bob", images(100, 100)),
    )
    .await;
    let status = refused.status();
    let retry_after = refused.headers().get("retry-after").cloned();
    let body: Value = refused.json().await.unwrap();
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"], "too_many_new_blobs", "{body}");
    assert_eq!(body["issues"][0]["pointer"], "/content/0/image_url/url");
    let wait: u64 = retry_after.unwrap().to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    assert_eq!(blob_files(dir.path()).len(), 100, "nothing written");

    // Pieces the hub holds already cost nothing, however many; 50 new ones still fit, 50 more
    // do not; Bob's minute is his own. (token, id, sender, recipient, first piece, pieces,
    // status, files after.)
    let steps = [
        (ALICE, "m-3", "alice", "bob", 0, 100, 201, 100),
        (ALICE, "m-4", "alice", "bob", 100, 50, 201, 150),
        (ALICE, "m-5", "alice", "bob", 150, 50, 429, 150),
        (BOB, "m-6", "bob", "alice", 1000, 100, 201, 250),
    ];
    for (token, id, from, to, first, n, status, files) in steps {
        let sent = publish(&server, token, &message(id, from, to, images(first, n))).await;
        assert_eq!(sent.status(), status, "{id}");
        assert_eq!(blob_files(dir.path()).len(), files, "{id}");
    }
    server.stop().await;
}
