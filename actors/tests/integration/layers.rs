//! The floor plan, enforced: no file of sleuth-actors imports from a layer above its own, and no files import
//! each other in a cycle (ARCHITECTURE.md § Layers).
//!
//! It reads the crate's own sources with `syn`, resolves every `crate::`, `super::` and `self::` path (and the
//! names a `use` brought in) to the file that defines the module, and checks the resulting graph. A file may use
//! what an enclosing module's `mod.rs` defines (a folder's shared definitions and its interface), so those edges
//! are left out of the cycle check; every other edge counts. `SLEUTH_LAYERS_DUMP=1` prints the edges.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The layers, lowest first. A file may import from its own layer and those below it, never from one above.
/// Every top-level module of `actors/src` is in exactly one layer.
const LAYERS: &[(&str, &[&str])] = &[
    ("foundations", &["text", "secrets", "telemetry", "config", "access"]),
    ("machine", &["machine"]),
    ("adapters", &["bus", "store", "guard", "entity_types", "nats_client"]),
    ("backends", &["index", "graph", "embed"]),
    ("services", &["retrieval", "llm", "ingest", "reader"]),
    ("stages", &["stages"]),
    ("runtime", &["runtime"]),
    ("node", &["node", "bootstrap", "client", "eval", "bench", "fuzzing"]),
    ("gateway", &["gateway"]),
    ("cli", &["cli"]),
];

/// One source file: its module path below `crate` and the inline modules it holds.
struct SourceFile {
    path: PathBuf,
    module: Vec<String>,
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
            files.push(SourceFile { path, module, test_only: false });
        }
    }
    files.sort_by(|a, b| a.module.cmp(&b.module));
    files
}

/// Collects the absolute module paths one file refers to.
struct References {
    /// The module the visitor is in: the file's, then any inline `mod` it entered.
    current: Vec<String>,
    /// Names a `use` brought into scope, and the absolute path each stands for.
    aliases: HashMap<String, Vec<String>>,
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
            name => self.aliases.get(name).map(|target| target.iter().chain(rest).cloned().collect()),
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
}

/// The file → file import graph, with the edges to an enclosing module left out.
struct Graph {
    files: Vec<SourceFile>,
    edges: BTreeMap<usize, BTreeSet<usize>>,
}

fn graph(root: &Path) -> Graph {
    let mut files = sources(root);
    let mut owner: HashMap<Vec<String>, usize> = files.iter().enumerate().map(|(i, f)| (f.module.clone(), i)).collect();
    let mut references = Vec::new();
    let mut tests = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(&file.path).expect("read a source file");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.path.display()));
        let mut visitor = References {
            current: file.module.clone(),
            aliases: HashMap::new(),
            inline: Vec::new(),
            tests: Vec::new(),
            found: Vec::new(),
        };
        visitor.visit_file(&ast);
        for module in &visitor.inline {
            owner.insert(module.clone(), i);
        }
        tests.extend(visitor.tests);
        references.push(visitor.found);
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
        for target in found {
            // The longest prefix of the path that is a module names the file it lives in.
            let Some(to) = (1..=target.len()).rev().find_map(|n| owner.get(&target[..n]).copied()) else {
                continue;
            };
            let enclosing = files[from].module.starts_with(&files[to].module);
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

fn layer(file: &SourceFile) -> Option<usize> {
    let top = file.module.first()?;
    LAYERS.iter().position(|(_, modules)| modules.contains(&top.as_str()))
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

fn problems(graph: &Graph) -> Vec<String> {
    let mut problems = Vec::new();
    for file in &graph.files {
        if !file.module.is_empty() && !file.test_only && layer(file).is_none() {
            problems.push(format!("{} is in no layer: add its top-level module to LAYERS", name(file)));
        }
    }
    for (&from, targets) in &graph.edges {
        for &to in targets {
            let (source, target) = (&graph.files[from], &graph.files[to]);
            if let (Some(low), Some(high)) = (layer(source), layer(target))
                && high > low
            {
                problems.push(format!(
                    "{} (layer {}) imports {} from the layer above, {}",
                    name(source),
                    LAYERS[low].0,
                    name(target),
                    LAYERS[high].0
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

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_file_imports_from_a_layer_above_and_no_files_import_each_other_in_a_cycle() {
    let graph = graph(&source_root());
    if std::env::var_os("SLEUTH_LAYERS_DUMP").is_some() {
        for (&from, targets) in &graph.edges {
            for &to in targets {
                println!("{} -> {}", name(&graph.files[from]), name(&graph.files[to]));
            }
        }
    }
    let problems = problems(&graph);
    assert!(problems.is_empty(), "the floor plan is broken:\n  {}", problems.join("\n  "));
}

/// The check itself: a cycle and an upward import planted in a copy of a small tree are both found.
#[test]
fn the_check_finds_a_planted_cycle_and_an_upward_import() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    std::fs::create_dir_all(root.join("machine")).unwrap();
    std::fs::write(root.join("lib.rs"), "pub mod text; pub mod machine;").unwrap();
    std::fs::write(root.join("text.rs"), "use crate::machine::caps::Caps;").unwrap();
    std::fs::write(root.join("machine/mod.rs"), "pub mod caps; pub mod outbound;").unwrap();
    std::fs::write(root.join("machine/caps.rs"), "use super::outbound::next; pub struct Caps;").unwrap();
    std::fs::write(root.join("machine/outbound.rs"), "pub fn next() { let _ = super::caps::Caps; }").unwrap();
    let found = problems(&graph(root));
    assert!(found.iter().any(|p| p.starts_with("text (layer foundations) imports machine::caps")), "{found:?}");
    assert!(
        found.iter().any(|p| p == "2 files import each other in a cycle: machine::caps, machine::outbound"),
        "{found:?}"
    );
    // Using the folder's shared definitions (`super::` to the enclosing mod.rs) is not a cycle.
    std::fs::write(root.join("machine/outbound.rs"), "use super::Shared; pub fn next() {}").unwrap();
    std::fs::write(root.join("machine/mod.rs"), "pub mod caps; pub mod outbound; pub struct Shared;").unwrap();
    std::fs::write(root.join("text.rs"), "").unwrap();
    assert_eq!(problems(&graph(root)), Vec::<String>::new());
}
