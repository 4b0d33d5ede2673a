//! The floor plan, enforced: in sleuth-core and in sleuth-actors, no file imports from a layer above its own, and
//! no files import each other in a cycle (ARCHITECTURE.md § Layers). Between the crates the compiler holds the
//! wall (sleuth-core cannot name sleuth-actors); inside each, this test does.
//!
//! It reads a crate's sources with `syn` and resolves every path to the file that defines the module it names:
//! `crate::`, `super::` and `self::` paths, the names a `use` brought in, bare paths that start with a child module
//! the file declares (`chain::links`), and the paths inside macro invocations (`format!`, `tracing::info!`, which
//! `syn` leaves as tokens). A file may use what an enclosing `mod.rs` defines when that `mod.rs` is the folder's
//! interface (types, traits, re-exports); once a `mod.rs` holds logic (a free function, or a method of a type of its
//! own), a child's use of it is an import like any other and counts for cycles. Test code (`#[cfg(test)]`) may
//! drive any layer. `SLEUTH_LAYERS_DUMP=1` prints the edges.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A crate's layers, lowest first. A file may import from its own layer and those below it, never from one above.
/// Every top-level module of the crate is in exactly one layer.
type Layers = &'static [(&'static str, &'static [&'static str])];

/// sleuth-actors, on top of sleuth-core (whose modules it re-exports under their own names: those paths lead out of
/// this crate and are the compiler's to check).
const ACTORS: Layers = &[
    ("foundations", &["secrets", "telemetry", "config", "access"]),
    ("adapters", &["bus", "store", "guard", "nats_client"]),
    ("backends", &["index", "graph", "embed"]),
    ("services", &["retrieval", "llm", "ingest"]),
    ("stages", &["stages"]),
    ("tenancy", &["tenancy"]),
    ("runtime", &["runtime"]),
    ("node", &["node", "bootstrap", "client", "eval", "bench", "fuzzing"]),
    ("gateway", &["gateway"]),
    ("cli", &["cli"]),
];

/// sleuth-core: the decisions, with no I/O.
const CORE: Layers = &[
    ("foundations", &["text", "entities", "entity_types"]),
    ("machine", &["machine"]),
    ("analysis", &["analysis"]),
    ("reader", &["reader"]),
    ("agents", &["agents"]),
    ("fixtures", &["fixtures"]),
];

/// One source file: its module path below `crate`.
struct SourceFile {
    path: PathBuf,
    module: Vec<String>,
    /// What a folder's module (`mod.rs`, `lib.rs`, a `name.rs` with a `name/`) holds besides its interface.
    logic: Logic,
    /// Declared under `#[cfg(test)]`: test code, which the check leaves out.
    test_only: bool,
}

fn sources(root: &Path) -> Vec<SourceFile> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read the source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(root).expect("below the root");
            let mut module: Vec<String> = relative
                .parent()
                .into_iter()
                .flat_map(|p| p.iter())
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            let stem = path.file_stem().expect("a file name").to_string_lossy().into_owned();
            match stem.as_str() {
                "lib" if module.is_empty() => {}
                // The binary's root is outside the library's module tree.
                "main" if module.is_empty() => continue,
                "mod" => {}
                _ => module.push(stem),
            }
            files.push(SourceFile { path, module, logic: Logic::default(), test_only: false });
        }
    }
    files.sort_by(|a, b| a.module.cmp(&b.module));
    files
}

/// The logic a file defines outside test code: its free functions, and the types it gives inherent methods.
#[derive(Default)]
struct Logic {
    functions: BTreeSet<String>,
    methods_of: BTreeSet<String>,
}

impl Logic {
    fn of(file: &syn::File) -> Logic {
        let mut logic = Logic::default();
        for item in &file.items {
            match item {
                syn::Item::Fn(f) if !test_only(&f.attrs) => {
                    logic.functions.insert(f.sig.ident.to_string());
                }
                syn::Item::Impl(i) if i.trait_.is_none() && !test_only(&i.attrs) => {
                    if let syn::Type::Path(ty) = &*i.self_ty
                        && let Some(last) = ty.path.segments.last()
                        && i.items.iter().any(|m| matches!(m, syn::ImplItem::Fn(_)))
                    {
                        logic.methods_of.insert(last.ident.to_string());
                    }
                }
                _ => {}
            }
        }
        logic
    }

    /// Whether `rest`, a path below this file's module, names its logic: one of its functions, or a method of
    /// one of its types (`Type::method`).
    fn used_by(&self, rest: &[String]) -> bool {
        match rest {
            [name, ..] if self.functions.contains(name) => true,
            [ty, _method, ..] => self.methods_of.contains(ty),
            _ => false,
        }
    }
}

/// Collects the absolute module paths one file refers to.
struct References {
    /// The module the visitor is in: the file's, then any inline `mod` it entered.
    current: Vec<String>,
    /// Names a `use` brought into scope, and the absolute path each stands for.
    aliases: HashMap<String, Vec<String>>,
    /// The child modules each module declares (`mod chain;`), by the module's absolute path.
    children: HashMap<Vec<String>, BTreeSet<String>>,
    /// Inline modules met, as absolute paths.
    inline: Vec<Vec<String>>,
    /// Modules declared under `#[cfg(test)]` in their own file: test code, which the check leaves out.
    tests: Vec<Vec<String>>,
    found: Vec<Vec<String>>,
}

impl References {
    /// The absolute path (below `crate`) that `segments` names from the current module, if it names one in
    /// this crate.
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" => Some(self.current.iter().chain(rest).cloned().collect()),
            "super" => {
                let mut base = self.current.clone();
                let mut rest = rest;
                base.pop()?;
                while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
                    base.pop()?;
                    rest = tail;
                }
                Some(base.into_iter().chain(rest.iter().cloned()).collect())
            }
            name => match self.aliases.get(name) {
                Some(target) => Some(target.iter().chain(rest).cloned().collect()),
                // A bare path into a child module this module declares: `chain::links`.
                None if self.children.get(&self.current).is_some_and(|c| c.contains(name)) => {
                    Some(self.current.iter().chain(segments).cloned().collect())
                }
                None => None,
            },
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => self.imported(prefix, &name.ident.to_string(), &name.ident.to_string()),
            syn::UseTree::Rename(rename) => {
                self.imported(prefix, &rename.ident.to_string(), &rename.rename.to_string())
            }
            syn::UseTree::Glob(_) => {
                if let Some(target) = self.resolve(prefix) {
                    self.found.push(target);
                }
            }
            syn::UseTree::Group(group) => {
                for tree in &group.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn imported(&mut self, prefix: &[String], name: &str, alias: &str) {
        let mut segments = prefix.to_vec();
        if name != "self" {
            segments.push(name.to_string());
        }
        if let Some(target) = self.resolve(&segments) {
            self.found.push(target.clone());
            self.aliases.insert(alias.to_string(), target);
        }
    }

    /// The paths written inside a macro's tokens: every run `a::b::c`, and a lone name that is a `use`d alias or a
    /// child module (`super::x` inside `format!` is as much an import as outside it). A name after a `.` is a
    /// field or a method (`request.history.len()`), never a path.
    fn macro_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        let mut after_dot = false;
        let mut in_range = false;
        let flush = |run: &mut Vec<String>, this: &mut References| {
            if !run.is_empty()
                && let Some(target) = this.resolve(run)
            {
                this.found.push(target);
            }
            run.clear();
        };
        for tree in tokens {
            let range_dot = std::mem::take(&mut in_range);
            match tree {
                proc_macro2::TokenTree::Ident(ident) => {
                    if !run.is_empty() && colons != 2 {
                        flush(&mut run, self);
                    }
                    if !std::mem::take(&mut after_dot) {
                        run.push(ident.to_string());
                    }
                    colons = 0;
                }
                proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() && colons < 2 => colons += 1,
                proc_macro2::TokenTree::Group(group) => {
                    flush(&mut run, self);
                    colons = 0;
                    after_dot = false;
                    self.macro_tokens(group.stream());
                }
                proc_macro2::TokenTree::Punct(p) => {
                    flush(&mut run, self);
                    colons = 0;
                    // One `.`, not either of a range's `..`.
                    let dot = p.as_char() == '.';
                    in_range = dot && p.spacing() == proc_macro2::Spacing::Joint;
                    after_dot = dot && !in_range && !range_dot;
                }
                proc_macro2::TokenTree::Literal(_) => {
                    flush(&mut run, self);
                    colons = 0;
                    after_dot = false;
                }
            }
        }
        flush(&mut run, self);
    }
}

/// Whether an item is compiled only for tests (`#[cfg(test)]`).
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|cfg| cfg == "test"))
}

impl<'ast> Visit<'ast> for References {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !test_only(attrs) {
            return syn::visit::visit_item(self, item);
        }
        if let syn::Item::Mod(module) = item
            && module.content.is_none()
        {
            self.tests.push(self.current.iter().cloned().chain([module.ident.to_string()]).collect());
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.current.push(item.ident.to_string());
            self.inline.push(self.current.clone());
            syn::visit::visit_item_mod(self, item);
            self.current.pop();
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(target) = self.resolve(&segments) {
            self.found.push(target);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.macro_tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// Every `mod name;` and `mod name { … }` of a file, by the absolute path of the module that declares it.
fn declared_children(file: &syn::File, module: &[String]) -> HashMap<Vec<String>, BTreeSet<String>> {
    fn walk(items: &[syn::Item], module: &[String], out: &mut HashMap<Vec<String>, BTreeSet<String>>) {
        for item in items {
            if let syn::Item::Mod(m) = item {
                out.entry(module.to_vec()).or_default().insert(m.ident.to_string());
                if let Some((_, inner)) = &m.content {
                    let path: Vec<String> = module.iter().cloned().chain([m.ident.to_string()]).collect();
                    walk(inner, &path, out);
                }
            }
        }
    }
    let mut out = HashMap::new();
    walk(&file.items, module, &mut out);
    out
}

/// The file → file import graph, with the edges to an enclosing interface-only `mod.rs` left out.
struct Graph {
    files: Vec<SourceFile>,
    edges: BTreeMap<usize, BTreeSet<usize>>,
}

fn graph(root: &Path) -> Graph {
    let mut files = sources(root);
    let mut owner: HashMap<Vec<String>, usize> = files.iter().enumerate().map(|(i, f)| (f.module.clone(), i)).collect();
    let parsed: Vec<syn::File> = files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file.path).expect("read a source file");
            syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.path.display()))
        })
        .collect();
    let mut children = HashMap::new();
    for (file, ast) in files.iter_mut().zip(&parsed) {
        children.extend(declared_children(ast, &file.module));
        // A folder's module: `mod.rs`, `lib.rs`, or a `name.rs` that declares children in `name/`.
        let declares = ast.items.iter().any(|i| matches!(i, syn::Item::Mod(m) if m.content.is_none()));
        let is_folder = declares || file.path.file_stem().is_some_and(|s| s == "mod" || s == "lib");
        if is_folder {
            file.logic = Logic::of(ast);
        }
    }
    let mut references = Vec::new();
    let mut exports: Vec<HashMap<String, Vec<String>>> = Vec::new();
    let mut tests = Vec::new();
    for (i, (file, ast)) in files.iter().zip(&parsed).enumerate() {
        let mut visitor = References {
            current: file.module.clone(),
            aliases: HashMap::new(),
            children: children.clone(),
            inline: Vec::new(),
            tests: Vec::new(),
            found: Vec::new(),
        };
        visitor.visit_file(ast);
        for module in &visitor.inline {
            owner.insert(module.clone(), i);
        }
        tests.extend(visitor.tests);
        references.push(visitor.found);
        exports.push(visitor.aliases);
    }
    // Test code may use fixtures from any layer: files declared under `#[cfg(test)]` import nothing here.
    for (i, file) in files.iter_mut().enumerate() {
        if tests.iter().any(|t| file.module.starts_with(t)) {
            file.test_only = true;
            references[i].clear();
        }
    }
    let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for (from, found) in references.into_iter().enumerate() {
        for mut target in found {
            // The longest prefix of the path that is a module names the file it lives in; a name that file only
            // re-exports (`pub use extract::read;`) leads on to the file that defines it.
            let mut to = None;
            for _ in 0..8 {
                let Some((n, file)) = (1..=target.len()).rev().find_map(|n| owner.get(&target[..n]).map(|f| (n, *f)))
                else {
                    break;
                };
                to = Some(file);
                match target.get(n).and_then(|name| exports[file].get(name)) {
                    Some(alias) if *alias != target[..=n] => {
                        target = alias.iter().chain(&target[n + 1..]).cloned().collect();
                    }
                    _ => break,
                }
            }
            let Some(to) = to else { continue };
            // A folder's interface (its types, traits, constants, re-exports) is free to use from inside it; its logic
            // is an import like any other.
            let inside = files[from].module.starts_with(&files[to].module);
            let enclosing = inside && !files[to].logic.used_by(&target[files[to].module.len()..]);
            if to != from && !enclosing {
                edges.entry(from).or_default().insert(to);
            }
        }
    }
    Graph { files, edges }
}

fn name(file: &SourceFile) -> String {
    if file.module.is_empty() { "crate".into() } else { file.module.join("::") }
}

fn layer(layers: Layers, file: &SourceFile) -> Option<usize> {
    let top = file.module.first()?;
    layers.iter().position(|(_, modules)| modules.contains(&top.as_str()))
}

/// Strongly connected components with more than one file (Tarjan).
fn cycles(graph: &Graph) -> Vec<Vec<usize>> {
    struct Tarjan<'g> {
        graph: &'g Graph,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in self.graph.edges.get(&v).into_iter().flatten() {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let n = graph.files.len();
    let mut tarjan = Tarjan {
        graph,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if tarjan.index[v].is_none() {
            tarjan.visit(v);
        }
    }
    tarjan.found
}

fn problems(graph: &Graph, layers: Layers) -> Vec<String> {
    let mut problems = Vec::new();
    for file in &graph.files {
        if !file.module.is_empty() && !file.test_only && layer(layers, file).is_none() {
            problems.push(format!("{} is in no layer: add its top-level module to the crate's layers", name(file)));
        }
    }
    for (&from, targets) in &graph.edges {
        for &to in targets {
            let (source, target) = (&graph.files[from], &graph.files[to]);
            if let (Some(low), Some(high)) = (layer(layers, source), layer(layers, target))
                && high > low
            {
                problems.push(format!(
                    "{} (layer {}) imports {} from the layer above, {}",
                    name(source),
                    layers[low].0,
                    name(target),
                    layers[high].0
                ));
            }
        }
    }
    for component in cycles(graph) {
        let mut names: Vec<String> = component.iter().map(|&i| name(&graph.files[i])).collect();
        names.sort();
        problems.push(format!("{} files import each other in a cycle: {}", names.len(), names.join(", ")));
    }
    problems
}

fn check(root: &Path, layers: Layers) {
    let graph = graph(root);
    if std::env::var_os("SLEUTH_LAYERS_DUMP").is_some() {
        for (&from, targets) in &graph.edges {
            for &to in targets {
                println!("{} -> {}", name(&graph.files[from]), name(&graph.files[to]));
            }
        }
    }
    let problems = problems(&graph, layers);
    assert!(problems.is_empty(), "the floor plan of {} is broken:\n  {}", root.display(), problems.join("\n  "));
}

#[test]
fn no_file_of_sleuth_actors_imports_from_a_layer_above_and_none_import_each_other_in_a_cycle() {
    check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), ACTORS);
}

#[test]
fn no_file_of_sleuth_core_imports_from_a_layer_above_and_none_import_each_other_in_a_cycle() {
    check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src"), CORE);
}

/// A small tree of core's layers for the planted faults below.
fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The check itself: a cycle and an upward import planted in a copy of a small tree are both found.
#[test]
fn the_check_finds_a_planted_cycle_and_an_upward_import() {
    let dir = tree(&[
        ("lib.rs", "pub mod text; pub mod machine;"),
        ("text.rs", "use crate::machine::caps::Caps;"),
        ("machine/mod.rs", "pub mod caps; pub mod outbound;"),
        ("machine/caps.rs", "use super::outbound::next; pub struct Caps;"),
        ("machine/outbound.rs", "pub fn next() { let _ = super::caps::Caps; }"),
    ]);
    let root = dir.path();
    let found = problems(&graph(root), CORE);
    assert!(found.iter().any(|p| p.starts_with("text (layer foundations) imports machine::caps")), "{found:?}");
    assert!(
        found.iter().any(|p| p == "2 files import each other in a cycle: machine::caps, machine::outbound"),
        "{found:?}"
    );
    // Using the folder's interface (`super::` to an enclosing mod.rs of types and re-exports) is not a cycle.
    std::fs::write(root.join("machine/outbound.rs"), "use super::Shared; pub fn next() {}").unwrap();
    std::fs::write(root.join("machine/mod.rs"), "pub mod caps; pub mod outbound; pub struct Shared;").unwrap();
    std::fs::write(root.join("machine/caps.rs"), "pub use super::outbound::next; pub struct Caps;").unwrap();
    std::fs::write(root.join("text.rs"), "").unwrap();
    assert_eq!(problems(&graph(root), CORE), Vec::<String>::new());
}

/// A `mod.rs` that holds logic is a file like any other: a child that calls back into it while it calls the child
/// is a cycle.
#[test]
fn the_check_finds_a_loop_through_a_mod_rs_that_holds_logic() {
    let dir = tree(&[
        ("lib.rs", "pub mod reader;"),
        ("reader/mod.rs", "mod spans; pub fn read() -> usize { spans::count() }"),
        ("reader/spans.rs", "pub fn count() -> usize { super::read() }"),
    ]);
    let found = problems(&graph(dir.path()), CORE);
    assert!(found.iter().any(|p| p == "2 files import each other in a cycle: reader, reader::spans"), "{found:?}");
    // The same mod.rs as an interface only (the logic in a file of its own) is not.
    std::fs::write(dir.path().join("reader/mod.rs"), "mod spans; mod extract; pub use extract::read;").unwrap();
    std::fs::write(dir.path().join("reader/extract.rs"), "pub fn read() -> usize { 1 }").unwrap();
    std::fs::write(dir.path().join("reader/spans.rs"), "pub fn count() -> usize { super::read() }").unwrap();
    assert_eq!(problems(&graph(dir.path()), CORE), Vec::<String>::new());
}

/// A bare path into a declared child module, and a path inside a macro's tokens, are imports too.
#[test]
fn the_check_sees_bare_child_paths_and_paths_inside_macros() {
    let dir = tree(&[
        ("lib.rs", "pub mod text; pub mod agents;"),
        ("text.rs", "mod words; pub fn t() -> String { words::w() }"),
        ("text/words.rs", "pub fn w() -> String { format!(\"{}\", crate::agents::name()) }"),
        ("agents/mod.rs", "pub fn name() -> &'static str { \"a\" }"),
    ]);
    let found = problems(&graph(dir.path()), CORE);
    assert!(
        found.iter().any(|p| p.starts_with("text::words (layer foundations) imports agents from the layer above")),
        "a path inside format! is an import: {found:?}"
    );
    // A bare child path: `words::w()` from text.rs; with words importing text back, a cycle.
    std::fs::write(dir.path().join("text/words.rs"), "pub fn w() -> String { super::t() }").unwrap();
    let found = problems(&graph(dir.path()), CORE);
    assert!(found.iter().any(|p| p == "2 files import each other in a cycle: text, text::words"), "{found:?}");
    // A field named like a child module, inside a macro, is no import of it: no cycle.
    std::fs::write(
        dir.path().join("text.rs"),
        "mod words; pub struct R { pub words: Vec<u8> } pub fn t(r: &R) -> String { format!(\"{}\", r.words.len()) }",
    )
    .unwrap();
    let found = problems(&graph(dir.path()), CORE);
    assert!(found.iter().all(|p| !p.contains("cycle")), "a field inside format! is not a path: {found:?}");
}
