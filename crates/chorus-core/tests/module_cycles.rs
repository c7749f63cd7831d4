//! No import cycles between modules inside any crate of the workspace.
//!
//! The check parses every `crates/*/src` tree with `syn`, maps each file to its module path
//! (`lib.rs`/`main.rs` are the crate root; `a.rs` and `a/mod.rs` are module `a`; `mod x;` in a
//! non-`mod.rs` file `a.rs` lives in `a/x.rs`; inline `mod x { .. }` blocks are modules too) and
//! collects every path that names something in the same crate: the leaves of `use` trees, and
//! paths that start with `crate::`, `super::` or `self::`, also inside macro calls and
//! attributes, and as strings in attributes (`#[serde(with = "crate::nullable")]`).
//!
//! Each path is resolved to the module that defines what it names, following `use`
//! re-exports (`use crate::Foo` where the root re-exports `a::Foo` names module `a`), globs
//! where a name is not found otherwise, and stopping at the first item that is not a module.
//!
//! **The rule.** A reference from module `A` to module `B` is an edge between *siblings*: with
//! `P` the longest common prefix of the two paths, the edge goes from the child of `P` on `A`'s
//! side to the child of `P` on `B`'s side (`flow::run::tests` naming `flow::approval::Gate` is
//! the edge `flow::run → flow::approval`; `api::x` naming `state` is `api → state`). A module
//! naming its own ancestors or descendants is no edge: a child using its parent's items
//! (`super::Thing`) or a parent using its children is how a module is built, not a cycle.
//! Test modules count like any other code. Every strongly connected component of more than one
//! module is a cycle; it is reported with each edge inside it and the lines that make the edge.
//!
//! No crate has an exception: chorus-formats and chorus-server had cycles and have none since
//! issue 14.
//!
//! The components are computed with `petgraph`'s Tarjan. Run with
//! `cargo test -p chorus-core --test module_cycles -- --nocapture` to see them (all of them are
//! printed).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use proc_macro2::{Span, TokenStream, TokenTree};
use syn::visit::Visit;

/// A module path under its crate root (empty for the root).
type ModPath = Vec<String>;

/// A place in a file that names another part of the crate.
#[derive(Debug, Clone)]
struct Ref {
    /// The path as written (`crate`, `super`, `self` or a local name first).
    segs: Vec<String>,
    /// The file holding it.
    file: PathBuf,
    /// Its 1-based line.
    line: usize,
}

/// What the check knows about one module.
#[derive(Debug, Default)]
struct Module {
    /// Names of child modules.
    children: BTreeSet<String>,
    /// Names brought in by module-level `use` items, with the path as written.
    imports: BTreeMap<String, Vec<String>>,
    /// Paths of module-level glob imports, as written.
    globs: Vec<Vec<String>>,
    /// Names of items defined here (other than modules).
    items: BTreeSet<String>,
    /// Every path naming something in the crate.
    refs: Vec<Ref>,
}

/// One crate's modules.
#[derive(Debug, Default)]
struct CrateModules {
    /// Modules by path.
    modules: BTreeMap<ModPath, Module>,
}

/// A sibling edge with the references that make it.
#[derive(Debug, Default)]
struct Evidence {
    /// `file:line: text` of each reference.
    lines: BTreeSet<String>,
}

/// The cycles of one crate: each component's modules and the edges inside it.
#[derive(Debug)]
struct Cycle {
    /// The modules, `::`-joined (`<root>` never occurs: the root has no siblings).
    modules: Vec<String>,
    /// `(from, to)` edges inside the component with their evidence.
    edges: BTreeMap<(String, String), Evidence>,
}

/// The `crates/` folder checked: this workspace's, or `CHORUS_CYCLES_CRATES` to measure another
/// tree (e.g. an older commit's, unpacked with `git archive`).
fn workspace_crates() -> PathBuf {
    std::env::var_os("CHORUS_CYCLES_CRATES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
}

/// The crate roots under `crates_dir`: (`name` or `name (bin)`, root file).
fn crate_roots(crates_dir: &Path) -> Vec<(String, PathBuf)> {
    let mut roots = Vec::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(crates_dir)
        .expect("crates dir")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|path| path.join("src").is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let src = dir.join("src");
        if src.join("lib.rs").is_file() {
            roots.push((name.clone(), src.join("lib.rs")));
        }
        if src.join("main.rs").is_file() {
            roots.push((format!("{name} (bin)"), src.join("main.rs")));
        }
        if let Ok(bins) = fs::read_dir(src.join("bin")) {
            let mut bins: Vec<PathBuf> = bins.map(|e| e.expect("dir entry").path()).collect();
            bins.sort();
            for bin in bins
                .into_iter()
                .filter(|p| p.extension() == Some("rs".as_ref()))
            {
                let stem = bin.file_stem().unwrap().to_string_lossy().into_owned();
                roots.push((format!("{name} (bin {stem})"), bin));
            }
        }
    }
    roots
}

fn line_of(span: Span) -> usize {
    span.start().line
}

/// Collects the references of one module body, not entering nested modules.
struct RefCollector<'a> {
    file: &'a Path,
    refs: Vec<Ref>,
}

impl RefCollector<'_> {
    fn push(&mut self, segs: Vec<String>, span: Span) {
        self.refs.push(Ref {
            segs,
            file: self.file.to_path_buf(),
            line: line_of(span),
        });
    }

    /// Finds `crate::a::b`, `super::x` and `self::y` in macro input.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            if let TokenTree::Group(group) = &trees[i] {
                self.scan_tokens(group.stream());
                i += 1;
                continue;
            }
            let preceded_by_colons_or_dollar = i > 0
                && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == ':' || p.as_char() == '$');
            match &trees[i] {
                TokenTree::Ident(ident)
                    if !preceded_by_colons_or_dollar
                        && ["crate", "super", "self"].contains(&ident.to_string().as_str()) =>
                {
                    let span = ident.span();
                    let mut segs = vec![ident.to_string()];
                    let mut j = i + 1;
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segs.push(next.to_string());
                        j += 3;
                    }
                    if segs.len() > 1 {
                        self.push(segs, span);
                    }
                    i = j;
                }
                _ => i += 1,
            }
        }
    }

    /// Finds paths written as strings in attributes (`#[serde(with = "crate::nullable")]`).
    fn scan_strings(&mut self, tokens: TokenStream) {
        for tree in tokens {
            match tree {
                TokenTree::Group(group) => self.scan_strings(group.stream()),
                TokenTree::Literal(literal) => {
                    if let Ok(text) = syn::parse_str::<syn::LitStr>(&literal.to_string()) {
                        self.push_string_path(&text.value(), literal.span());
                    }
                }
                _ => {}
            }
        }
    }

    /// Records `text` when it is a path starting with `crate`, `super` or `self`.
    fn push_string_path(&mut self, text: &str, span: Span) {
        let path = text.split('<').next().unwrap_or_default();
        let segs: Vec<String> = path
            .split("::")
            .map(str::trim)
            .filter(|seg| !seg.is_empty())
            .map(str::to_owned)
            .collect();
        let rooted = segs
            .first()
            .is_some_and(|first| ["crate", "super", "self"].contains(&first.as_str()));
        let identifiers = segs
            .iter()
            .all(|seg| seg.chars().all(|c| c.is_alphanumeric() || c == '_'));
        if rooted && identifiers && segs.len() > 1 {
            self.push(segs, span);
        }
    }
}

/// Flattens a `use` tree into (name bound or `None` for a glob, full path, span of the leaf).
fn use_leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_leaves(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let ident = name.ident.to_string();
            let (bound, path) = if ident == "self" {
                (prefix.last().cloned(), prefix.clone())
            } else {
                let mut path = prefix.clone();
                path.push(ident.clone());
                (Some(ident), path)
            };
            out.push(UseLeaf {
                bound,
                path,
                span: name.ident.span(),
            });
        }
        syn::UseTree::Rename(rename) => {
            let mut path = prefix.clone();
            let ident = rename.ident.to_string();
            if ident != "self" {
                path.push(ident);
            }
            out.push(UseLeaf {
                bound: Some(rename.rename.to_string()).filter(|name| name != "_"),
                path,
                span: rename.ident.span(),
            });
        }
        syn::UseTree::Glob(glob) => out.push(UseLeaf {
            bound: None,
            path: prefix.clone(),
            span: glob.star_token.span,
        }),
        syn::UseTree::Group(group) => {
            for item in &group.items {
                use_leaves(item, prefix, out);
            }
        }
    }
}

/// One leaf of a `use` tree.
struct UseLeaf {
    /// The name it binds (`None` for a glob or `as _`).
    bound: Option<String>,
    /// The full path.
    path: Vec<String>,
    /// Where it is.
    span: Span,
}

impl<'ast> Visit<'ast> for RefCollector<'_> {
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {
        // A nested module is collected as a module of its own.
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(crate)`, `pub(super)`, `pub(in path)` name an ancestor, never a sibling.
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        use_leaves(&item.tree, &mut Vec::new(), &mut leaves);
        for leaf in leaves {
            self.push(leaf.path, leaf.span);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let first = path.segments[0].ident.to_string();
            if ["crate", "super", "self"].contains(&first.as_str()) {
                let segs = path.segments.iter().map(|s| s.ident.to_string()).collect();
                self.push(segs, path.segments[0].ident.span());
            }
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if attr.path().is_ident("doc") {
            return;
        }
        match &attr.meta {
            syn::Meta::List(list) => {
                self.scan_tokens(list.tokens.clone());
                self.scan_strings(list.tokens.clone());
            }
            syn::Meta::NameValue(nv) => {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(text),
                    ..
                }) = &nv.value
                {
                    self.push_string_path(&text.value(), text.span());
                }
            }
            syn::Meta::Path(_) => {}
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan_tokens(mac.tokens.clone());
    }
}

/// The name an item binds in its module's namespace, for items other than modules and uses.
fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Parses the module at `path` (whose items are `items`, in `file`) and its descendants.
/// `dir` is where its child module files live.
fn collect_module(
    krate: &mut CrateModules,
    path: ModPath,
    file: &Path,
    items: &[syn::Item],
    dir: &Path,
) {
    let mut module = Module::default();
    let mut collector = RefCollector {
        file,
        refs: Vec::new(),
    };
    let mut nested = Vec::new();
    for item in items {
        match item {
            syn::Item::Mod(item_mod) => {
                let name = item_mod.ident.to_string();
                module.children.insert(name.clone());
                nested.push(item_mod);
            }
            syn::Item::Use(item_use) => {
                let mut leaves = Vec::new();
                use_leaves(&item_use.tree, &mut Vec::new(), &mut leaves);
                for leaf in leaves {
                    match leaf.bound {
                        Some(name) => {
                            module.imports.insert(name, leaf.path);
                        }
                        None if !leaf.path.is_empty() => module.globs.push(leaf.path),
                        None => {}
                    }
                }
            }
            other => {
                if let Some(name) = item_name(other) {
                    module.items.insert(name);
                }
            }
        }
        collector.visit_item(item);
    }
    module.refs = collector.refs;
    krate.modules.insert(path.clone(), module);

    for item_mod in nested {
        let name = item_mod.ident.to_string();
        let mut child = path.clone();
        child.push(name.clone());
        match &item_mod.content {
            Some((_, items)) => collect_module(krate, child, file, items, &dir.join(&name)),
            None => {
                let explicit = item_mod.attrs.iter().find_map(|attr| {
                    let syn::Meta::NameValue(nv) = &attr.meta else {
                        return None;
                    };
                    if !nv.path.is_ident("path") {
                        return None;
                    }
                    let syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) = &nv.value
                    else {
                        return None;
                    };
                    Some(file.parent().unwrap().join(s.value()))
                });
                let (child_file, child_dir) = match explicit {
                    Some(explicit) => {
                        let child_dir = explicit.parent().unwrap().to_path_buf();
                        (explicit, child_dir)
                    }
                    None if dir.join(format!("{name}.rs")).is_file() => {
                        (dir.join(format!("{name}.rs")), dir.join(&name))
                    }
                    None => (dir.join(&name).join("mod.rs"), dir.join(&name)),
                };
                parse_file_module(krate, child, &child_file, &child_dir);
            }
        }
    }
}

fn parse_file_module(krate: &mut CrateModules, path: ModPath, file: &Path, dir: &Path) {
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("parse {}: {e}", file.display()));
    collect_module(krate, path, file, &parsed.items, dir);
}

/// Parses a crate from its root file.
fn parse_crate(root: &Path) -> CrateModules {
    let mut krate = CrateModules::default();
    let dir = root.parent().unwrap().to_path_buf();
    parse_file_module(&mut krate, Vec::new(), root, &dir);
    krate
}

impl CrateModules {
    /// Turns a path as written in module `at` into a path from the crate root, or `None` when it
    /// names another crate.
    fn absolute(&self, at: &[String], segs: &[String]) -> Option<Vec<String>> {
        let mut base = at.to_vec();
        let mut rest = segs;
        match rest.first()?.as_str() {
            "crate" => {
                base.clear();
                rest = &rest[1..];
            }
            "self" => rest = &rest[1..],
            "super" => {
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            first => {
                let module = self.modules.get(at)?;
                let local = module.children.contains(first)
                    || module.imports.contains_key(first)
                    || module.items.contains(first);
                if !local {
                    return None;
                }
            }
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module defining what the absolute path `segs` names, or `None` for another crate.
    fn resolve(&self, segs: &[String], depth: usize) -> Option<ModPath> {
        let mut current: ModPath = Vec::new();
        for (i, seg) in segs.iter().enumerate() {
            let module = self.modules.get(&current)?;
            if module.children.contains(seg) {
                current.push(seg.clone());
                continue;
            }
            if depth > 32 {
                return Some(current);
            }
            if let Some(written) = module.imports.get(seg) {
                let mut next = self.absolute(&current, written)?;
                next.extend(segs[i + 1..].iter().cloned());
                return self.resolve(&next, depth + 1);
            }
            if module.items.contains(seg) {
                return Some(current);
            }
            for glob in &module.globs {
                let Some(source) = self
                    .absolute(&current, glob)
                    .and_then(|abs| self.resolve(&abs, depth + 1))
                else {
                    continue;
                };
                let Some(from) = self.modules.get(&source) else {
                    continue;
                };
                if from.children.contains(seg)
                    || from.imports.contains_key(seg)
                    || from.items.contains(seg)
                {
                    let mut next = source.clone();
                    next.extend(segs[i..].iter().cloned());
                    return self.resolve(&next, depth + 1);
                }
            }
            return Some(current);
        }
        Some(current)
    }

    /// Sibling edges `(from, to)` with the lines that make them.
    fn sibling_edges(&self) -> BTreeMap<(ModPath, ModPath), Evidence> {
        let mut edges: BTreeMap<(ModPath, ModPath), Evidence> = BTreeMap::new();
        let mut sources: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
        for (at, module) in &self.modules {
            for r in &module.refs {
                let Some(target) = self
                    .absolute(at, &r.segs)
                    .and_then(|abs| self.resolve(&abs, 0))
                else {
                    continue;
                };
                if target.starts_with(at) || at.starts_with(&target) {
                    continue;
                }
                let common = at.iter().zip(&target).take_while(|(a, b)| a == b).count();
                let from = at[..=common].to_vec();
                let to = target[..=common].to_vec();
                let lines = sources.entry(r.file.clone()).or_insert_with(|| {
                    fs::read_to_string(&r.file)
                        .expect("source")
                        .lines()
                        .map(str::to_owned)
                        .collect()
                });
                let text = lines.get(r.line - 1).map(|l| l.trim()).unwrap_or("");
                edges.entry((from, to)).or_default().lines.insert(format!(
                    "{}:{}: {text}",
                    relative(&r.file).display(),
                    r.line
                ));
            }
        }
        edges
    }

    /// Every strongly connected component of more than one module.
    fn cycles(&self) -> Vec<Cycle> {
        let mut edges = self.sibling_edges();
        let mut graph: DiGraph<ModPath, ()> = DiGraph::new();
        let mut nodes: BTreeMap<ModPath, NodeIndex> = BTreeMap::new();
        for (from, to) in edges.keys() {
            for module in [from, to] {
                if !nodes.contains_key(module) {
                    nodes.insert(module.clone(), graph.add_node(module.clone()));
                }
            }
            graph.add_edge(nodes[from], nodes[to], ());
        }
        let mut cycles: Vec<Cycle> = tarjan_scc(&graph)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let members: BTreeSet<ModPath> =
                    component.iter().map(|&n| graph[n].clone()).collect();
                let inside: Vec<(ModPath, ModPath)> = edges
                    .keys()
                    .filter(|(f, t)| members.contains(f) && members.contains(t))
                    .cloned()
                    .collect();
                Cycle {
                    modules: members.iter().map(|m| m.join("::")).collect(),
                    edges: inside
                        .into_iter()
                        .map(|key| {
                            let evidence = edges.remove(&key).unwrap();
                            ((key.0.join("::"), key.1.join("::")), evidence)
                        })
                        .collect(),
                }
            })
            .collect();
        cycles.sort_by(|a, b| a.modules.cmp(&b.modules));
        cycles
    }
}

fn relative(file: &Path) -> PathBuf {
    let base = workspace_crates();
    let base = base.canonicalize().unwrap_or(base);
    let file = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    file.strip_prefix(&base)
        .map(|p| Path::new("crates").join(p))
        .unwrap_or(file)
}

fn describe(krate: &str, cycles: &[Cycle]) -> String {
    let mut out = String::new();
    for cycle in cycles {
        writeln!(out, "{krate}: cycle among {}", cycle.modules.join(", ")).unwrap();
        for ((from, to), evidence) in &cycle.edges {
            writeln!(out, "  {from} -> {to}").unwrap();
            for line in &evidence.lines {
                writeln!(out, "    {line}").unwrap();
            }
        }
    }
    out
}

#[test]
fn no_module_cycles() {
    let mut failures = String::new();
    let mut total = 0;
    for (name, root) in crate_roots(&workspace_crates()) {
        let cycles = parse_crate(&root).cycles();
        let report = describe(&name, &cycles);
        eprint!("{report}");
        total += cycles.len();
        failures.push_str(&report);
    }
    eprintln!("{total} cycles in all");
    assert!(
        failures.is_empty(),
        "import cycles between modules (see the rule in tests/module_cycles.rs):\n{failures}"
    );
}

/// Writes a small crate and checks that the rule finds exactly the cycle it holds.
#[test]
fn the_check_finds_a_cycle_through_a_re_export_and_ignores_parent_child_use() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("module_cycles_fixture");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("src/flow")).unwrap();
    let files = [
        (
            "src/lib.rs",
            "mod a;\nmod b;\nmod c;\nmod flow;\npub use a::Alpha;\npub use b::beta;\n",
        ),
        // a -> b through the root's re-export of `b::beta`, inside a macro call.
        (
            "src/a.rs",
            "pub struct Alpha;\npub fn f() -> String { format!(\"{:?}\", crate::beta()) }\n",
        ),
        // b -> a through the root re-export `crate::Alpha`.
        (
            "src/b.rs",
            "use crate::Alpha;\npub fn beta() -> Option<Alpha> { None }\n",
        ),
        // c -> a only: no cycle.
        ("src/c.rs", "use crate::a::f;\n"),
        // Parent and children using each other is no cycle; siblings one way neither.
        (
            "src/flow/mod.rs",
            "mod run;\nmod gate;\npub struct Thing;\npub use run::go;\n",
        ),
        (
            "src/flow/run.rs",
            "use super::Thing;\npub fn go() -> Thing { super::gate::open(); Thing }\n",
        ),
        (
            "src/flow/gate.rs",
            "pub fn open() {}\n#[cfg(test)]\nmod tests { use super::*; use crate::flow::Thing; }\n",
        ),
    ];
    for (path, text) in files {
        fs::write(dir.join(path), text).unwrap();
    }
    let cycles = parse_crate(&dir.join("src/lib.rs")).cycles();
    let summary: Vec<String> = cycles.iter().map(summarize).collect();
    assert_eq!(
        summary,
        ["a b: a->b b->a"],
        "{}",
        describe("fixture", &cycles)
    );
    let lines: Vec<&String> = cycles[0].edges.values().flat_map(|e| &e.lines).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("src/b.rs:1: use crate::Alpha;")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("src/a.rs:2:")), "{lines:?}");

    // Adding the edge gate -> run (a path in a string of an attribute, to the re-export
    // `flow::go`) closes a cycle among siblings under `flow`.
    fs::write(
        dir.join("src/flow/gate.rs"),
        "pub struct Open(#[serde(serialize_with = \"crate::flow::go\")] u8);\npub fn open() {}\n",
    )
    .unwrap();
    let cycles = parse_crate(&dir.join("src/lib.rs")).cycles();
    let summary: Vec<String> = cycles.iter().map(summarize).collect();
    assert_eq!(
        summary,
        [
            "a b: a->b b->a",
            "flow::gate flow::run: flow::gate->flow::run flow::run->flow::gate"
        ],
        "{}",
        describe("fixture", &cycles)
    );
}

/// `modules: from->to ...` of a cycle.
fn summarize(cycle: &Cycle) -> String {
    let edges: Vec<String> = cycle
        .edges
        .keys()
        .map(|(f, t)| format!("{f}->{t}"))
        .collect();
    format!("{}: {}", cycle.modules.join(" "), edges.join(" "))
}
