//! A PDF's outline (its bookmarks) as the sections of its pages, so a citation names the section as well as the
//! page. The outline is walked here, with lopdf's objects, rather than with lopdf's own `get_toc`: that one follows
//! `Next` and `First` links without remembering where it has been, and a damaged or hostile file whose links loop
//! would hold the ingestion forever. Here every object is visited once and the walk has a size and depth limit.

use std::collections::{HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId};

/// Most outline entries read from one file.
const MAX_ENTRIES: usize = 10_000;
/// Deepest outline level read; deeper entries are left out.
const MAX_DEPTH: usize = 16;
/// Most section names one piece of a page is labelled with.
const MAX_NAMES_PER_PAGE: usize = 4;

/// How near a page's top a destination must be for its section to start the page: a fraction of its height.
const TOP: f32 = 0.85;

/// One bookmark: its title and the 1-based page it points to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bookmark {
    pub title: String,
    pub page: u32,
    /// Whether it points at the page's top (the whole page, or a position in its top part): then the section
    /// before it does not go on onto that page.
    pub at_top: bool,
}

/// The bookmarks of `doc` in outline order (a parent before its children); none when it has no outline or the
/// outline cannot be read. A bookmark pointing at no page of this file (another file, a missing name) is left out.
pub fn bookmarks(doc: &Document) -> Vec<Bookmark> {
    let Ok(catalog) = doc.catalog() else { return Vec::new() };
    let Some(root) = catalog.get(b"Outlines").ok().and_then(|o| dictionary(doc, o)) else { return Vec::new() };
    let pages: HashMap<ObjectId, u32> = doc.get_pages().into_iter().map(|(number, id)| (id, number)).collect();
    let names = named_destinations(doc, catalog);
    let mut found = Vec::new();
    let mut seen: HashSet<ObjectId> = HashSet::new();
    // Depth first, in order: an entry, then its children, then its next sibling.
    let mut stack: Vec<(&Object, usize)> = root.get(b"First").ok().map(|first| (first, 1)).into_iter().collect();
    let mut visited = 0;
    while let Some((node, depth)) = stack.pop() {
        visited += 1;
        if visited > MAX_ENTRIES {
            break;
        }
        if let Object::Reference(id) = node
            && !seen.insert(*id)
        {
            continue;
        }
        let Some(entry) = dictionary(doc, node) else { continue };
        if let Ok(next) = entry.get(b"Next") {
            stack.push((next, depth));
        }
        if depth < MAX_DEPTH
            && let Ok(first) = entry.get(b"First")
        {
            stack.push((first, depth + 1));
        }
        let title = entry
            .get(b"Title")
            .ok()
            .and_then(|t| doc.dereference(t).ok())
            .and_then(|(_, t)| lopdf::decode_text_string(t).ok())
            .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|t| !t.is_empty());
        let place = destination(doc, entry).and_then(|d| place_of(doc, d, &pages, &names));
        if let (Some(title), Some((page, at_top))) = (title, place) {
            found.push(Bookmark { title, page, at_top });
        }
    }
    found
}

/// Each page's text cut into its sections: a page's text up to the heading of the first bookmark on it is the
/// section it continues (the last bookmark of an earlier page), and each bookmark's heading, found in the text,
/// starts a section. A bookmark whose heading is not found in the text names the section it falls in as well
/// ("Results / Tables", as a window spanning sections is named). Before the first bookmark, text has no section.
pub fn sectioned_pages(marks: &[Bookmark], pages: &[String]) -> Vec<Vec<(Option<String>, String)>> {
    pages
        .iter()
        .zip(1u32..)
        .map(|(text, page)| {
            let continued = marks.iter().filter(|m| m.page < page).max_by_key(|m| m.page);
            let starting: Vec<&Bookmark> = marks.iter().filter(|m| m.page == page).collect();
            let mut names: Vec<&str> = Vec::new();
            // Where the page's first bookmark points at the page's top and its heading cannot be found, the
            // section before it ends with the page before.
            let fresh = starting.first().is_some_and(|m| m.at_top && heading_at(text, 0, &m.title).is_none());
            if let Some(mark) = continued.filter(|_| !fresh) {
                names.push(&mark.title);
            }
            let mut pieces = Vec::new();
            let mut cursor = 0;
            for mark in starting {
                match heading_at(text, cursor, &mark.title) {
                    Some(at) => {
                        pieces.push((label(&names), text[cursor..at].trim().to_string()));
                        names = vec![&mark.title];
                        cursor = at;
                    }
                    None => {
                        if !names.contains(&mark.title.as_str()) {
                            names.push(&mark.title);
                        }
                    }
                }
            }
            pieces.push((label(&names), text[cursor..].trim().to_string()));
            pieces.retain(|(_, text)| !text.is_empty());
            pieces
        })
        .collect()
}

/// Section names as one label, the first few of them.
fn label(names: &[&str]) -> Option<String> {
    (!names.is_empty()).then(|| names.iter().take(MAX_NAMES_PER_PAGE).copied().collect::<Vec<_>>().join(" / "))
}

/// Where `title` is written in `text` at or after `from`: at the start of a line if it is anywhere so, else its
/// first occurrence.
fn heading_at(text: &str, from: usize, title: &str) -> Option<usize> {
    let rest = &text[from..];
    let mut first = None;
    for (at, _) in rest.match_indices(title) {
        first.get_or_insert(at);
        if at == 0 || rest[..at].ends_with('\n') {
            return Some(from + at);
        }
    }
    first.map(|at| from + at)
}

/// An object as a dictionary, following one reference.
fn dictionary<'a>(doc: &'a Document, object: &'a Object) -> Option<&'a Dictionary> {
    doc.dereference(object).ok().and_then(|(_, o)| o.as_dict().ok())
}

/// Where an outline entry points: its `Dest`, else the destination of its `GoTo` action.
fn destination<'a>(doc: &'a Document, entry: &'a Dictionary) -> Option<&'a Object> {
    if let Ok(dest) = entry.get(b"Dest") {
        return Some(dest);
    }
    let action = dictionary(doc, entry.get(b"A").ok()?)?;
    (action.get(b"S").ok()?.as_name().ok()? == b"GoTo").then(|| action.get(b"D").ok()).flatten()
}

/// The page number a destination names, and whether it points at the page's top: an explicit
/// `[page /XYZ left top zoom]` array (or `/Fit`, `/FitH top`, …), or a name looked up in `names`.
fn place_of(
    doc: &Document,
    dest: &Object,
    pages: &HashMap<ObjectId, u32>,
    names: &HashMap<Vec<u8>, Vec<Object>>,
) -> Option<(u32, bool)> {
    let (_, dest) = doc.dereference(dest).ok()?;
    let items = match dest {
        Object::Array(items) => items,
        Object::Name(name) | Object::String(name, _) => names.get(name)?,
        Object::Dictionary(d) => return place_of(doc, d.get(b"D").ok()?, pages, names),
        _ => return None,
    };
    let page_id = items.first()?.as_reference().ok()?;
    let page = *pages.get(&page_id)?;
    let top = match items.get(1).and_then(|k| k.as_name().ok()) {
        Some(b"XYZ") => items.get(3),
        Some(b"FitH" | b"FitBH") => items.get(2),
        _ => None,
    };
    let at_top = match top.and_then(number) {
        // A position: near the top of the page's height.
        Some(y) => page_height(doc, page_id).is_some_and(|(bottom, height)| y >= bottom + TOP * height),
        // The whole page (`/Fit`), or a position left as it was (`null`): the top.
        None => true,
    };
    Some((page, at_top))
}

/// A page's lower edge and height, from its `MediaBox` or one it inherits.
fn page_height(doc: &Document, page: ObjectId) -> Option<(f32, f32)> {
    let mut node = doc.get_dictionary(page).ok()?;
    for _ in 0..MAX_DEPTH {
        if let Ok(Object::Array(corners)) = node.get(b"MediaBox").map(|b| doc.dereference(b).map_or(b, |(_, b)| b)) {
            let (low, high) = (corners.get(1).and_then(number)?, corners.get(3).and_then(number)?);
            return Some((low.min(high), (high - low).abs()));
        }
        node = dictionary(doc, node.get(b"Parent").ok()?)?;
    }
    None
}

fn number(object: &Object) -> Option<f32> {
    match object {
        Object::Integer(i) => Some(*i as f32),
        Object::Real(r) => Some(*r),
        _ => None,
    }
}

/// The document's named destinations, name to destination array: the catalog's `Dests` dictionary and the
/// `Dests` name tree under `Names`, each node of the tree read once.
fn named_destinations(doc: &Document, catalog: &Dictionary) -> HashMap<Vec<u8>, Vec<Object>> {
    let mut names = HashMap::new();
    let target = |value: &Object| -> Option<Vec<Object>> {
        let (_, value) = doc.dereference(value).ok()?;
        match value {
            Object::Array(a) => Some(a.clone()),
            Object::Dictionary(d) => doc.dereference(d.get(b"D").ok()?).ok()?.1.as_array().ok().cloned(),
            _ => None,
        }
    };
    if let Some(dests) = catalog.get(b"Dests").ok().and_then(|d| dictionary(doc, d)) {
        for (name, value) in dests.iter().take(MAX_ENTRIES) {
            if let Some(id) = target(value) {
                names.insert(name.clone(), id);
            }
        }
    }
    let tree = catalog.get(b"Names").ok().and_then(|n| dictionary(doc, n)).and_then(|n| n.get(b"Dests").ok());
    let mut stack: Vec<(&Object, usize)> = tree.map(|t| (t, 0)).into_iter().collect();
    let mut seen: HashSet<ObjectId> = HashSet::new();
    while let Some((node, depth)) = stack.pop() {
        if names.len() >= MAX_ENTRIES || depth > MAX_DEPTH {
            continue;
        }
        if let Object::Reference(id) = node
            && !seen.insert(*id)
        {
            continue;
        }
        let Some(node) = dictionary(doc, node) else { continue };
        if let Ok(Object::Array(kids)) = node.get(b"Kids").map(|k| doc.dereference(k).map_or(k, |(_, k)| k)) {
            stack.extend(kids.iter().take(MAX_ENTRIES).map(|kid| (kid, depth + 1)));
        }
        if let Ok(Object::Array(pairs)) = node.get(b"Names").map(|n| doc.dereference(n).map_or(n, |(_, n)| n)) {
            for pair in pairs.chunks_exact(2) {
                if let (Ok(name), Some(id)) = (pair[0].as_str(), target(&pair[1])) {
                    names.insert(name.to_vec(), id);
                }
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use lopdf::{Stream, dictionary};

    use super::*;

    /// A document of `count` empty pages, and their object ids.
    fn pages(count: usize) -> (Document, Vec<ObjectId>) {
        let mut doc = Document::with_version("1.5");
        let tree = doc.new_object_id();
        let kids: Vec<ObjectId> = (0..count)
            .map(|_| {
                let content = doc.add_object(Stream::new(dictionary! {}, Vec::new()));
                doc.add_object(dictionary! { "Type" => "Page", "Parent" => tree, "Contents" => content })
            })
            .collect();
        let refs: Vec<Object> = kids.iter().map(|&k| k.into()).collect();
        doc.objects.insert(
            tree,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => refs, "Count" => count as i64,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            }),
        );
        (doc, kids)
    }

    fn title(text: &str) -> Object {
        Object::string_literal(text)
    }

    fn labelled(page: &[(Option<String>, String)]) -> Vec<(Option<&str>, &str)> {
        page.iter().map(|(s, t)| (s.as_deref(), t.as_str())).collect()
    }

    #[test]
    fn bookmarks_name_the_sections_of_the_pages_they_point_to() {
        let (mut doc, kids) = pages(3);
        let outlines = doc.new_object_id();
        let (intro, results, tables) = (doc.new_object_id(), doc.new_object_id(), doc.new_object_id());
        // "Tables" points at page 3 by name, through the Names tree; "Results" through a GoTo action.
        let named =
            doc.add_object(dictionary! { "Names" => vec![title("tables"), vec![kids[2].into(), "Fit".into()].into()] });
        doc.objects.insert(
            intro,
            Object::Dictionary(dictionary! {
                "Title" => title("Introduction"), "Parent" => outlines, "Next" => results,
                "Dest" => vec![kids[0].into(), "Fit".into()],
            }),
        );
        doc.objects.insert(
            results,
            Object::Dictionary(dictionary! {
                "Title" => title("Results"), "Parent" => outlines, "Prev" => intro, "First" => tables, "Last" => tables,
                "A" => dictionary! { "S" => "GoTo", "D" => vec![kids[1].into(), "XYZ".into(), 72.into(), 400.into(), Object::Null] },
            }),
        );
        doc.objects.insert(
            tables,
            Object::Dictionary(dictionary! {
                "Title" => title("Tables"), "Parent" => results, "Dest" => title("tables"),
            }),
        );
        doc.objects.insert(outlines, Object::Dictionary(dictionary! { "First" => intro, "Last" => results }));
        let catalog = doc.add_object(dictionary! {
            "Type" => "Catalog", "Pages" => Object::Reference((1, 0)), "Outlines" => outlines,
            "Names" => dictionary! { "Dests" => named },
        });
        doc.trailer.set("Root", catalog);
        let marks = bookmarks(&doc);
        let found: Vec<(&str, u32, bool)> = marks.iter().map(|m| (m.title.as_str(), m.page, m.at_top)).collect();
        assert_eq!(found, [("Introduction", 1, true), ("Results", 2, false), ("Tables", 3, true)]);
        let pages: Vec<String> = [
            "Introduction\n\nWhy the harbor needs a vault.",
            "The guild agreed in 1901.\n\nResults\n\nThe vault held.",
            "Tables\n\nRow one.",
            "More rows.",
        ]
        .map(String::from)
        .to_vec();
        let cut = sectioned_pages(&marks, &pages);
        assert_eq!(labelled(&cut[0]), [(Some("Introduction"), "Introduction\n\nWhy the harbor needs a vault.")]);
        assert_eq!(
            labelled(&cut[1]),
            [(Some("Introduction"), "The guild agreed in 1901."), (Some("Results"), "Results\n\nThe vault held.")],
            "page 2 goes on with Introduction until the Results heading"
        );
        assert_eq!(labelled(&cut[2]), [(Some("Tables"), "Tables\n\nRow one.")]);
        assert_eq!(labelled(&cut[3]), [(Some("Tables"), "More rows.")]);
        // Headings not in the text: the page is named by the sections it spans, without the one before a
        // bookmark at its top.
        let unwritten: Vec<String> = ["Intro text.", "Some text.", "Row one.", "More."].map(String::from).to_vec();
        let cut = sectioned_pages(&marks, &unwritten);
        assert_eq!(labelled(&cut[1]), [(Some("Introduction / Results"), "Some text.")], "Results is half-way down");
        assert_eq!(labelled(&cut[2]), [(Some("Tables"), "Row one.")], "Tables points at the top of page 3");
    }

    #[test]
    fn an_outline_whose_links_loop_ends_and_a_file_without_one_has_no_sections() {
        let (mut doc, kids) = pages(1);
        let outlines = doc.new_object_id();
        let (a, b) = (doc.new_object_id(), doc.new_object_id());
        // a → b → a by Next, and b's child is a again: every link loops.
        doc.objects.insert(
            a,
            Object::Dictionary(dictionary! {
                "Title" => title("A"), "Next" => b, "Dest" => vec![kids[0].into()],
            }),
        );
        doc.objects.insert(
            b,
            Object::Dictionary(dictionary! {
                "Title" => title("B"), "Next" => a, "First" => a, "Dest" => vec![kids[0].into()],
            }),
        );
        doc.objects.insert(outlines, Object::Dictionary(dictionary! { "First" => a }));
        let catalog = doc.add_object(
            dictionary! { "Type" => "Catalog", "Pages" => Object::Reference((1, 0)), "Outlines" => outlines },
        );
        doc.trailer.set("Root", catalog);
        let found: Vec<String> = bookmarks(&doc).into_iter().map(|m| m.title).collect();
        assert_eq!(found, ["A", "B"]);

        let (mut plain, _) = pages(2);
        let catalog = plain.add_object(dictionary! { "Type" => "Catalog", "Pages" => Object::Reference((1, 0)) });
        plain.trailer.set("Root", catalog);
        assert!(bookmarks(&plain).is_empty());
        let cut = sectioned_pages(&[], &["a".to_string(), String::new()]);
        assert_eq!(cut, [vec![(None, "a".to_string())], vec![]]);
    }
}
