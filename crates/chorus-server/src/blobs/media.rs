//! The media types kept in the blob store and their file extensions.

/// (media type, extension) of every kept type; the first entry of an extension is the type it
/// is served with.
const TYPES: [(&str, &str); 13] = [
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
    ("audio/wav", "wav"),
    ("audio/x-wav", "wav"),
    ("audio/wave", "wav"),
    ("audio/mpeg", "mp3"),
    ("audio/ogg", "ogg"),
    ("audio/flac", "flac"),
    ("audio/webm", "weba"),
    ("audio/mp4", "m4a"),
    ("audio/aac", "aac"),
];

/// The extension for `mime` (parameters ignored), when that type is kept.
pub fn extension(mime: &str) -> Option<&'static str> {
    let base = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    TYPES.iter().find(|(m, _)| *m == base).map(|(_, e)| *e)
}

/// The content type a blob with extension `ext` is served with.
pub fn content_type(ext: &str) -> Option<&'static str> {
    TYPES.iter().find(|(_, e)| *e == ext).map(|(m, _)| *m)
}

/// The media type of an `input_audio` part's `format`, when it names a kept container.
pub fn audio_format_type(format: &str) -> Option<&'static str> {
    let ext = match format.to_ascii_lowercase().as_str() {
        "wav" => "wav",
        "mp3" => "mp3",
        "ogg" => "ogg",
        "flac" => "flac",
        "webm" => "weba",
        "m4a" | "mp4" => "m4a",
        "aac" => "aac",
        _ => return None,
    };
    content_type(ext)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_types_and_extensions_both_ways() {
        assert_eq!(extension("image/PNG"), Some("png"));
        assert_eq!(extension("audio/x-wav; codecs=1"), Some("wav"));
        assert_eq!(content_type("wav"), Some("audio/wav"));
        assert_eq!(extension("image/svg+xml"), None);
        assert_eq!(extension("text/html"), None);
        assert_eq!(audio_format_type("MP3"), Some("audio/mpeg"));
        assert_eq!(audio_format_type("pcm16"), None);
    }
}
