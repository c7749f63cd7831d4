//! Finds images and audio in a stored document and replaces them by blob URLs.

use std::fmt::Write;

use axum::http::StatusCode;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chorus_core::media::DataUrl;
use serde_json::Value;

use super::media::{audio_format_type, extension};
use super::{BLOB_PATH, BlobStore, Created};
use crate::error::{ApiError, IssueBody};

/// Where a piece of media was found and how to get its bytes (borrowed from the document:
/// looking for media copies nothing).
enum Source<'a> {
    /// Base64 bytes of a known media type.
    Inline { mime: &'a str, base64: &'a str },
    /// An http(s) URL to fetch (only when fetching is configured).
    Remote { url: &'a str },
}

struct Job<'a> {
    pointer: String,
    source: Source<'a>,
}

/// A refusal naming the media's JSON pointer.
fn refuse(status: StatusCode, code: &str, pointer: &str, message: String, hint: &str) -> ApiError {
    let mut e = ApiError::new(
        status,
        code,
        format!("the media at {pointer} cannot be kept: {message}"),
    );
    e.body.issues.push(IssueBody {
        pointer: pointer.to_owned(),
        message,
        hint: Some(hint.to_owned()),
    });
    e
}

/// Appends `/key` to the JSON pointer `at`, escaped as RFC 6901 says.
fn push_key(at: &mut String, key: &str) {
    at.push('/');
    for c in key.chars() {
        match c {
            '~' => at.push_str("~0"),
            '/' => at.push_str("~1"),
            c => at.push(c),
        }
    }
}

/// The job for a URL string at `at` + `suffix`, if it is media to keep.
fn url_job<'a>(
    at: &str,
    suffix: &str,
    url: &'a str,
    fetch: bool,
    images_only: bool,
) -> Option<Job<'a>> {
    let pointer = || format!("{at}{suffix}");
    if let Some(d) = DataUrl::parse(url) {
        let kept = extension(d.media_type).is_some();
        let wanted = !images_only || d.media_type.to_ascii_lowercase().starts_with("image/");
        return (kept && wanted).then(|| Job {
            pointer: pointer(),
            source: Source::Inline {
                mime: d.media_type,
                base64: d.base64,
            },
        });
    }
    let remote = url.starts_with("https://") || url.starts_with("http://");
    (fetch && remote).then(|| Job {
        pointer: pointer(),
        source: Source::Remote { url },
    })
}

/// Collects the media of `v` (at the pointer `at`, which is extended while the children are
/// read and left as it was) into `jobs`; a pointer is written out only for media found.
fn collect<'a>(v: &'a Value, at: &mut String, fetch: bool, jobs: &mut Vec<Job<'a>>) {
    let len = at.len();
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                // (Writing into a String cannot fail.)
                let _ = write!(at, "/{i}");
                collect(item, at, fetch, jobs);
                at.truncate(len);
            }
        }
        Value::Object(map) => {
            let kind = map.get("type").and_then(Value::as_str);
            match kind {
                Some("image_url") => match map.get("image_url") {
                    Some(Value::String(url)) => {
                        jobs.extend(url_job(at, "/image_url", url, fetch, true));
                    }
                    Some(Value::Object(image)) => {
                        if let Some(url) = image.get("url").and_then(Value::as_str) {
                            jobs.extend(url_job(at, "/image_url/url", url, fetch, true));
                        }
                    }
                    _ => {}
                },
                Some("input_audio") => {
                    if let Some(audio) = map.get("input_audio").and_then(Value::as_object)
                        && let Some(data) = audio.get("data").and_then(Value::as_str)
                    {
                        let format = audio.get("format").and_then(Value::as_str);
                        if data.starts_with("data:") {
                            jobs.extend(url_job(at, "/input_audio/data", data, false, false));
                        } else if let Some(mime) = format.and_then(audio_format_type) {
                            jobs.push(Job {
                                pointer: format!("{at}/input_audio/data"),
                                source: Source::Inline { mime, base64: data },
                            });
                        }
                    }
                }
                Some("file") => {
                    if let Some(file) = map.get("file").and_then(Value::as_object) {
                        if let Some(data) = file.get("file_data").and_then(Value::as_str) {
                            jobs.extend(url_job(at, "/file/file_data", data, false, false));
                        }
                        // Remote files are kept only when they turn out to be images or audio.
                        if let Some(url) = file.get("url").and_then(Value::as_str) {
                            jobs.extend(url_job(at, "/file/url", url, fetch, false));
                        }
                    }
                }
                _ => {}
            }
            for (k, child) in map {
                if kind == Some(k.as_str()) {
                    continue;
                }
                push_key(at, k);
                collect(child, at, fetch, jobs);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// What [`BlobStore::keep_media`] did to a document.
#[derive(Debug, Default)]
pub struct Kept {
    /// True when any piece of media was replaced by a blob URL.
    pub changed: bool,
    /// The blobs it created (not there before), for [`BlobStore::take_back`] when the
    /// document is refused after all.
    pub created: Vec<Created>,
}

impl BlobStore {
    /// Takes the pieces of `read` the store does not hold yet (each name once) from `agent`'s
    /// new-blob minute, or refuses the document at its first piece.
    async fn take_new(
        &self,
        agent: &str,
        read: &[(String, String, Vec<u8>)],
    ) -> Result<(), ApiError> {
        let Some((first, _, _)) = read.first() else {
            return Ok(());
        };
        let most = self.new_blobs.per_minute();
        if most == 0 {
            return Ok(());
        }
        let names: std::collections::BTreeSet<&String> = read.iter().map(|(_, n, _)| n).collect();
        let missing = self
            .missing(names.into_iter().cloned().collect())
            .await
            .map_err(|e| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    e.to_string(),
                )
            })?;
        let n = u32::try_from(missing).unwrap_or(u32::MAX);
        let wait = match self.new_blobs.take(agent, n) {
            Ok(()) => return Ok(()),
            Err(wait) => wait,
        };
        let hint = if n > most {
            format!(
                "send at most {most} new images and audio clips in one message, or raise [media] max_new_blobs_per_minute in the config"
            )
        } else {
            format!("retry in {wait} s, or raise [media] max_new_blobs_per_minute in the config")
        };
        let mut e = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_new_blobs",
            first,
            format!(
                "{n} new images and audio clips, more than agent {agent:?} may still make the hub keep this minute ({most} a minute)"
            ),
            &hint,
        );
        e.retry_after_secs = Some(wait);
        Err(e)
    }

    /// True when `document` has images or audio that [`BlobStore::keep_media`] would move.
    pub fn has_media(&self, document: &Value) -> bool {
        let mut jobs = Vec::new();
        collect(
            document,
            &mut String::new(),
            self.config.fetch_remote,
            &mut jobs,
        );
        !jobs.is_empty()
    }

    /// Moves the images and audio of `document` into the store and points the document at
    /// them. Every piece is read (decoded, fetched, its size checked) before any is written, so
    /// that a refused piece writes nothing; a write that fails takes back what was written.
    /// The pieces the store does not hold yet are taken from `agent`'s new-blob minute
    /// (`max_new_blobs_per_minute`): past it the document is refused (429) with none written.
    pub async fn keep_media(&self, document: &mut Value, agent: &str) -> Result<Kept, ApiError> {
        let mut jobs = Vec::new();
        collect(
            document,
            &mut String::new(),
            self.config.fetch_remote,
            &mut jobs,
        );
        let most = self.config.max_items_per_message;
        if let Some(past) = jobs.get(most) {
            return Err(refuse(
                StatusCode::UNPROCESSABLE_ENTITY,
                "too_many_media",
                &past.pointer,
                format!(
                    "{} images and audio clips, more than the {most} one message may carry",
                    jobs.len()
                ),
                "send the media over several messages, or raise [media] max_items_per_message in the config",
            ));
        }
        let mut read = Vec::with_capacity(jobs.len());
        for job in jobs {
            let (bytes, mime) = match job.source {
                Source::Inline { mime, base64 } => {
                    let bytes = STANDARD.decode(base64.trim()).map_err(|e| {
                        refuse(
                            StatusCode::UNPROCESSABLE_ENTITY,
                            "invalid_media",
                            &job.pointer,
                            format!("the base64 payload does not decode: {e}"),
                            "give standard base64 (RFC 4648, with padding)",
                        )
                    })?;
                    (bytes, mime.to_owned())
                }
                Source::Remote { url } => match self.fetch(url, &job.pointer).await? {
                    Some(found) => found,
                    None => continue,
                },
            };
            if bytes.len() > self.config.max_blob_bytes {
                return Err(self.too_large(&job.pointer, bytes.len()));
            }
            // (Only kept types are read: every piece has a name.)
            let Some(name) = super::blob_name(&bytes, &mime) else {
                continue;
            };
            read.push((job.pointer, name, bytes));
        }
        self.take_new(agent, &read).await?;
        let mut kept = Kept::default();
        let mut written = std::collections::HashSet::new();
        for (pointer, name, bytes) in read {
            // The same piece twice in one document is written once (a second put would count
            // as another message carrying it, and keep it when the document is refused).
            if written.contains(&name) {
                if let Some(slot) = document.pointer_mut(&pointer) {
                    *slot = Value::String(format!("{BLOB_PATH}{name}"));
                    kept.changed = true;
                }
                continue;
            }
            let name = match self.put_named(name, bytes).await {
                Ok((name, created)) => {
                    kept.created.extend(created);
                    name
                }
                Err(e) => {
                    self.take_back(kept.created).await;
                    return Err(ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "store_unavailable",
                        e.to_string(),
                    ));
                }
            };
            if let Some(slot) = document.pointer_mut(&pointer) {
                *slot = Value::String(format!("{BLOB_PATH}{name}"));
                kept.changed = true;
            }
            written.insert(name);
        }
        Ok(kept)
    }

    fn too_large(&self, pointer: &str, len: usize) -> ApiError {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "media_too_large",
            pointer,
            format!(
                "{len} bytes or more, above the limit of {} bytes",
                self.config.max_blob_bytes
            ),
            "send a smaller image or audio clip, or raise [media] max_blob_bytes in the config",
        )
    }

    /// Fetches `url`; `None` when its content type is not kept (the URL then stays).
    async fn fetch(&self, url: &str, pointer: &str) -> Result<Option<(Vec<u8>, String)>, ApiError> {
        let unavailable = |message: String| {
            refuse(
                StatusCode::UNPROCESSABLE_ENTITY,
                "media_unavailable",
                pointer,
                message,
                "the server keeps remote media when a message is stored ([media] fetch_remote); give a URL it can fetch now, or the image inline as a data: URL",
            )
        };
        let client = self.client().map_err(|e| unavailable(e.to_string()))?;
        let mut response = client
            .get(url)
            .send()
            .await
            .map_err(|e| unavailable(format!("fetching it failed: {e}")))?;
        if !response.status().is_success() {
            return Err(unavailable(format!(
                "fetching it answered HTTP {}",
                response.status()
            )));
        }
        let mime = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if extension(&mime).is_none() {
            return Ok(None);
        }
        let limit = self.config.max_blob_bytes;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(self.too_large(pointer, limit + 1));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| unavailable(format!("reading it failed: {e}")))?
        {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > limit {
                return Err(self.too_large(pointer, bytes.len()));
            }
        }
        Ok(Some((bytes, mime)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::MediaConfig;
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn moves_inline_images_and_audio_and_leaves_the_rest() {
        let store = BlobStore::in_memory(MediaConfig::default());
        let png = STANDARD.encode(b"\x89PNG fake");
        let wav = STANDARD.encode(b"RIFF fake");
        let mut doc = json!({"role": "user", "content": [
            {"type": "text", "text": "data:image/png;base64,notmedia"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}"), "detail": "low"}},
            {"type": "image_url", "image_url": "https://example.invalid/a.png"},
            {"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "pcm16"}},
            {"type": "image_url", "image_url": {"url": "data:image/svg+xml;base64,PHN2Zy8+"}},
        ]});
        assert!(store.keep_media(&mut doc, "alice").await.unwrap().changed);
        let url = doc["content"][1]["image_url"]["url"].as_str().unwrap();
        assert!(
            url.starts_with("/v1/blobs/sha256-") && url.ends_with(".png"),
            "{url}"
        );
        assert_eq!(doc["content"][1]["image_url"]["detail"], "low");
        let name = url.strip_prefix(BLOB_PATH).unwrap();
        assert_eq!(store.get(name).await.unwrap().unwrap().0, b"\x89PNG fake");
        let audio = doc["content"][3]["input_audio"]["data"].as_str().unwrap();
        assert!(audio.ends_with(".wav"), "{audio}");
        assert_eq!(doc["content"][0]["text"], "data:image/png;base64,notmedia");
        assert_eq!(
            doc["content"][2]["image_url"],
            "https://example.invalid/a.png"
        );
        assert_eq!(doc["content"][4]["input_audio"]["data"], "AAAA");
        assert!(
            doc["content"][5]["image_url"]["url"]
                .as_str()
                .unwrap()
                .starts_with("data:")
        );
    }

    #[tokio::test]
    async fn finds_media_under_keys_that_need_escaping() {
        // The pointer is built as the document is walked: `/` and `~` in a key are escaped
        // (RFC 6901), or the piece would be read but never replaced.
        let store = BlobStore::in_memory(MediaConfig::default());
        let png = STANDARD.encode(b"\x89PNG fake");
        let part =
            json!({"type": "image_url", "image_url": format!("data:image/png;base64,{png}")});
        let mut doc = json!({"metadata": {"a/b~c": [{"x": 1}, part], "plain": "text"}});
        assert!(store.has_media(&doc));
        assert!(!store.has_media(&json!({"metadata": {"a/b~c": [{"x": 1}], "n": 2}})));
        assert!(store.keep_media(&mut doc, "alice").await.unwrap().changed);
        let url = doc["metadata"]["a/b~c"][1]["image_url"].as_str().unwrap();
        assert!(url.starts_with(BLOB_PATH), "{url}");
        let big = STANDARD.encode(b"12345");
        let tiny = BlobStore::in_memory(MediaConfig {
            max_blob_bytes: 4,
            ..MediaConfig::default()
        });
        let mut doc = json!({"k~/": {"type": "image_url", "image_url": format!("data:image/png;base64,{big}")}});
        let e = tiny.keep_media(&mut doc, "alice").await.unwrap_err();
        assert_eq!(e.body.issues[0].pointer, "/k~0~1/image_url");
    }

    #[tokio::test]
    async fn refuses_bad_base64_and_oversized_media_with_the_pointer() {
        let store = BlobStore::in_memory(MediaConfig {
            max_blob_bytes: 4,
            ..MediaConfig::default()
        });
        let mut bad = json!({"content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,!!"}}]});
        let e = store.keep_media(&mut bad, "alice").await.unwrap_err();
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(e.body.issues[0].pointer, "/content/0/image_url/url");
        let big = STANDARD.encode(b"12345");
        let mut doc = json!({"payload": {"parts": [{"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{big}")}}]}});
        let e = store.keep_media(&mut doc, "alice").await.unwrap_err();
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(e.body.issues[0].pointer, "/payload/parts/0/image_url/url");
        assert!(
            e.body.message.contains("limit of 4 bytes"),
            "{}",
            e.body.message
        );
    }
}
