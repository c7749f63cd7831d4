//! chorus-harmony against openai-harmony 0.0.8, side by side on one realistic agent
//! conversation (system, developer with tools, user / analysis / tool call / tool result /
//! final turns): encoding load, rendering, parsing, streaming, and the raw BPE encode floor.
//! After the criterion groups it prints medians and ratios.
//!
//! Run: `cargo bench -p chorus-harmony --bench harmony`

use std::hint::black_box;
use std::time::{Duration, Instant};

use chorus_harmony::{
    Conversation, DeveloperContent, Encoding, Message, ParseOptions, Rank, RenderMode,
    RenderOptions, Role, StreamParser, SystemContent, ToolDescription, encoding, parse, render,
};
use criterion::Criterion;
use openai_harmony::{
    HarmonyEncoding, HarmonyEncodingName, StreamableParser, load_harmony_encoding,
};
use serde_json::json;

fn agent_conversation() -> Conversation {
    let tool = |name: &str, description: &str, parameters| ToolDescription {
        name: name.into(),
        description: description.into(),
        parameters: Some(parameters),
    };
    let developer = DeveloperContent {
        instructions: Some("You are a travel assistant. Check the weather and flights before you answer, and keep answers short.".into()),
        ..Default::default()
    }
    .with_function_tools(vec![
        tool("get_weather", "Gets the current weather for a city.", json!({"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. Tokyo"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}}, "required": ["city"]})),
        tool("search_flights", "Searches flights between two airports on a date.", json!({"type": "object", "properties": {
            "from": {"type": "string", "description": "IATA code of the departure airport"},
            "to": {"type": "string", "description": "IATA code of the arrival airport"},
            "date": {"type": "string", "description": "Departure date, YYYY-MM-DD"},
            "max_stops": {"type": "integer", "default": 1}}, "required": ["from", "to", "date"]})),
        tool("book", "Books a flight by id.", json!({"type": "object", "properties": {"flight_id": {"type": "string"}}, "required": ["flight_id"]})),
    ]);
    let call = |tool: &str, args: &str| {
        Message::new(Role::Assistant, args)
            .with_channel("commentary")
            .with_recipient(format!("functions.{tool}"))
            .with_content_type("<|constrain|>json")
    };
    let result = |tool: &str, text: &str| {
        Message::from_tool(format!("functions.{tool}"), text)
            .with_recipient("assistant")
            .with_channel("commentary")
    };
    let messages = vec![
        Message::new(Role::System, SystemContent { conversation_start_date: Some("2025-08-05".into()), ..Default::default() }),
        Message::new(Role::Developer, developer),
        Message::new(Role::User, "I want to fly from Oslo to Tokyo next Friday. What's the weather there, and which flights are cheapest?"),
        Message::new(Role::Assistant, "The user wants weather in Tokyo and flights OSL to a Tokyo airport (HND or NRT) on Friday 2025-08-08. I'll call get_weather first, then search_flights.").with_channel("analysis"),
        call("get_weather", "{\"city\": \"Tokyo\", \"unit\": \"celsius\"}"),
        result("get_weather", "{\"temperature\": 31, \"condition\": \"humid, partly cloudy\", \"humidity\": 78}"),
        Message::new(Role::Assistant, "Weather is hot and humid. Now the flights, allowing one stop.").with_channel("analysis"),
        call("search_flights", "{\"from\": \"OSL\", \"to\": \"HND\", \"date\": \"2025-08-08\", \"max_stops\": 1}"),
        result("search_flights", "[{\"id\": \"SK983\", \"stops\": 1, \"price_eur\": 612, \"via\": \"CPH\"}, {\"id\": \"AY73\", \"stops\": 1, \"price_eur\": 655, \"via\": \"HEL\"}, {\"id\": \"LH716\", \"stops\": 1, \"price_eur\": 701, \"via\": \"MUC\"}]"),
        Message::new(Role::Assistant, "Cheapest is SK983 via Copenhagen at 612 EUR. Summarize with the weather.").with_channel("analysis"),
        Message::new(Role::Assistant, "Tokyo will be hot (about 31 °C) and humid, partly cloudy. The cheapest flight on 8 August is SK983 via Copenhagen for €612; AY73 via Helsinki costs €655. Shall I book SK983?").with_channel("final"),
        Message::new(Role::User, "Yes, book SK983 please."),
    ];
    Conversation { messages }
}

fn reference_encoding() -> HarmonyEncoding {
    let dir = std::env::temp_dir().join(format!("chorus-harmony-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(dir.join("o200k_base.tiktoken")).unwrap());
    encoding().write_tiktoken_file(&mut file).unwrap();
    std::io::Write::flush(&mut file).unwrap();
    // SAFETY: set in `main` before criterion or anything else starts a thread.
    unsafe { std::env::set_var("TIKTOKEN_ENCODINGS_BASE", &dir) };
    load_harmony_encoding(HarmonyEncodingName::HarmonyGptOss).unwrap()
}

/// Median wall time of `runs` calls of `f`.
fn median<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

struct Fixture {
    reference: HarmonyEncoding,
    ours: Conversation,
    theirs: openai_harmony::chat::Conversation,
    tokens: Vec<Rank>,
    text: String,
}

impl Fixture {
    fn new(reference: HarmonyEncoding) -> Self {
        let ours = agent_conversation();
        let theirs = serde_json::from_str(&serde_json::to_string(&ours).unwrap()).unwrap();
        let plain = RenderOptions {
            mode: RenderMode::Plain,
            drop_analysis: false,
            ..Default::default()
        };
        let tokens = render(&ours, &plain).unwrap();
        let text = ours.messages.iter().map(|m| m.text()).collect::<String>();
        Self {
            reference,
            ours,
            theirs,
            tokens,
            text,
        }
    }

    fn render_ours(&self) -> Vec<Rank> {
        render(&self.ours, &RenderOptions::default()).unwrap()
    }

    fn render_theirs(&self) -> Vec<Rank> {
        let drop = Default::default();
        self.reference
            .render_conversation_for_completion(
                &self.theirs,
                openai_harmony::chat::Role::Assistant,
                Some(&drop),
            )
            .unwrap()
    }

    fn parse_ours(&self) -> usize {
        parse(&self.tokens, None, ParseOptions::STRICT)
            .unwrap()
            .messages
            .len()
    }

    fn parse_theirs(&self) -> usize {
        self.reference
            .parse_messages_from_completion_tokens(self.tokens.iter().copied(), None)
            .unwrap()
            .len()
    }

    fn stream_ours(&self) -> usize {
        let mut parser = StreamParser::new(None, ParseOptions::STRICT);
        let mut deltas = 0;
        for &id in &self.tokens {
            parser.process(id).unwrap();
            deltas += parser.last_content_delta().map_or(0, str::len);
        }
        deltas
    }

    fn stream_theirs(&self) -> usize {
        let mut parser = StreamableParser::new(self.reference.clone(), None).unwrap();
        let mut deltas = 0;
        for &id in &self.tokens {
            parser.process(id).unwrap();
            deltas += parser.last_content_delta().unwrap().map_or(0, |d| d.len());
        }
        deltas
    }
}

fn criterion_groups(c: &mut Criterion, f: &Fixture) {
    let mut group = c.benchmark_group("render_completion");
    group.bench_function("chorus", |b| b.iter(|| black_box(f.render_ours())));
    group.bench_function("openai-harmony", |b| {
        b.iter(|| black_box(f.render_theirs()))
    });
    group.finish();
    let mut group = c.benchmark_group("parse");
    group.bench_function("chorus", |b| b.iter(|| black_box(f.parse_ours())));
    group.bench_function("openai-harmony", |b| b.iter(|| black_box(f.parse_theirs())));
    group.finish();
    let mut group = c.benchmark_group("stream");
    group.bench_function("chorus", |b| b.iter(|| black_box(f.stream_ours())));
    group.bench_function("openai-harmony", |b| {
        b.iter(|| black_box(f.stream_theirs()))
    });
    group.finish();
    let mut group = c.benchmark_group("encode_ordinary");
    group.bench_function("chorus", |b| {
        b.iter(|| black_box(encoding().encode_ordinary(&f.text)))
    });
    group.bench_function("openai-harmony", |b| {
        b.iter(|| black_box(f.reference.tokenizer().encode_ordinary(&f.text)))
    });
    group.finish();
}

fn print_ratios(f: &Fixture) {
    assert_eq!(
        f.render_ours(),
        f.render_theirs(),
        "both render the same tokens"
    );
    let messages = f.ours.messages.len() as f64;
    let tokens = f.tokens.len() as f64;
    let per = |d: Duration, n: f64| d.as_secs_f64() * 1e9 / n;
    let line = |what: &str, unit: &str, n: f64, ours: Duration, theirs: Duration| {
        println!(
            "{what:<18} chorus {:>10.1} ns/{unit}  openai-harmony {:>10.1} ns/{unit}  ratio {:>6.1}x",
            per(ours, n),
            per(theirs, n),
            theirs.as_secs_f64() / ours.as_secs_f64()
        );
    };
    println!(
        "\n== chorus-harmony vs openai-harmony 0.0.8 ({} messages, {} tokens; medians) ==",
        messages, tokens
    );
    let load_ours = median(15, Encoding::load);
    let load_theirs = median(5, || {
        drop(black_box(
            load_harmony_encoding(HarmonyEncodingName::HarmonyGptOss).unwrap(),
        ))
    });
    println!(
        "{:<18} chorus {:>10.1} ms      openai-harmony {:>10.1} ms      ratio {:>6.1}x",
        "encoding load",
        load_ours.as_secs_f64() * 1e3,
        load_theirs.as_secs_f64() * 1e3,
        load_theirs.as_secs_f64() / load_ours.as_secs_f64()
    );
    line(
        "render (per msg)",
        "msg",
        messages,
        median(301, || f.render_ours()),
        median(101, || f.render_theirs()),
    );
    line(
        "parse (per token)",
        "tok",
        tokens,
        median(301, || f.parse_ours()),
        median(101, || f.parse_theirs()),
    );
    line(
        "stream (per token)",
        "tok",
        tokens,
        median(301, || f.stream_ours()),
        median(101, || f.stream_theirs()),
    );
    let floor_ours = median(301, || encoding().encode_ordinary(&f.text));
    let floor_theirs = median(101, || {
        drop(black_box(f.reference.tokenizer().encode_ordinary(&f.text)))
    });
    let text_tokens = encoding().encode_ordinary(&f.text).len() as f64;
    line(
        "raw BPE encode",
        "tok",
        text_tokens,
        floor_ours,
        floor_theirs,
    );
    let render_time = median(301, || f.render_ours());
    let rendered = f.render_ours().len() as f64;
    println!(
        "throughput: render {:.1} M tokens/s vs raw BPE encode floor {:.1} M tokens/s (chorus encoder), {:.1} M tokens/s (reference encoder)",
        rendered / render_time.as_secs_f64() / 1e6,
        text_tokens / floor_ours.as_secs_f64() / 1e6,
        text_tokens / floor_theirs.as_secs_f64() / 1e6
    );
}

fn main() {
    let fixture = Fixture::new(reference_encoding());
    let mut criterion = Criterion::default().configure_from_args();
    criterion_groups(&mut criterion, &fixture);
    criterion.final_summary();
    print_ratios(&fixture);
}
