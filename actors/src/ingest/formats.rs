//! The file formats `sleuth ingest docs` reads, each into [`Document`]s with its structure kept: Markdown and
//! plain text as they are; HTML without its page chrome (navigation, header, footer, scripts) and Office documents
//! (.docx, .xlsx, .pptx and the legacy binaries) through their Markdown, so headings become sections and tables
//! rows with their header; PDF page by page, so a citation names its page and the section its bookmarks put the
//! page in. Every reader is a crate made for its format (dom_query, office_oxide, pdf-extract, lopdf); a file it
//! cannot read is refused with why.

use std::path::Path;

use anyhow::{Context, bail};
use sleuth_messages::JsonMap;

use super::{Document, Part, parse_jsonl, parse_markdown, pdf_outline};
use crate::access::Ownership;

/// The file extensions read, in the order the usage error names them.
pub const EXTENSIONS: &[&str] = &[
    "jsonl", "ndjson", "md", "markdown", "txt", "text", "html", "htm", "xhtml", "pdf", "docx", "xlsx", "pptx", "doc",
    "xls", "ppt",
];

/// HTML elements that are a page's chrome, not its text.
const CHROME: &[&str] = &[
    "script", "style", "meta", "head", "nav", "header", "footer", "aside", "noscript", "template", "form", "button",
    "svg", "iframe",
];

/// The documents in one file, by its extension; `id` names them (the file's path).
pub fn read(path: &Path, bytes: Vec<u8>) -> anyhow::Result<Vec<Document>> {
    let id = path.display().to_string();
    let stem = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let text = || String::from_utf8(bytes.clone()).context("not UTF-8 text");
    match extension.as_str() {
        "jsonl" | "ndjson" => parse_jsonl(&id, &text()?),
        "md" | "markdown" => Ok(vec![parse_markdown(&id, &stem, text()?)]),
        "txt" | "text" => Ok(vec![plain(id, stem, text()?, Vec::new())]),
        "html" | "htm" | "xhtml" => Ok(vec![html(&id, &stem, &String::from_utf8_lossy(&bytes))]),
        "pdf" => pdf(&id, &stem, &bytes).map(|d| vec![d]),
        "docx" | "xlsx" | "pptx" | "doc" | "xls" | "ppt" => office(&id, &stem, &extension, bytes).map(|d| vec![d]),
        other => bail!("unsupported file type '{other}', expected one of .{}", EXTENSIONS.join(", .")),
    }
}

fn plain(id: String, title: String, text: String, parts: Vec<Part>) -> Document {
    Document { id, title, text, metadata: JsonMap::new(), ownership: Ownership::shared(), parts }
}

/// A web page as its Markdown without the page's chrome, read as Markdown is; its title the first heading (where no
/// text comes before it), else `<title>`, else the file's stem.
pub fn html(id: &str, stem: &str, html: &str) -> Document {
    let page = dom_query::Document::from(html);
    let title = page.select("title").text().split_whitespace().collect::<Vec<_>>().join(" ");
    let body = page.md(Some(CHROME)).to_string();
    let mut doc = parse_markdown(id, stem, body);
    if doc.title == stem && !title.is_empty() {
        doc.title = title;
    }
    doc
}

/// An Office document as its Markdown, read as Markdown is.
fn office(id: &str, stem: &str, extension: &str, bytes: Vec<u8>) -> anyhow::Result<Document> {
    let format = office_oxide::DocumentFormat::from_extension(extension)
        .with_context(|| format!("unsupported Office format .{extension}"))?;
    let document = office_oxide::Document::from_reader(std::io::Cursor::new(bytes), format)
        .map_err(|e| anyhow::anyhow!("not a readable .{extension} file: {e}"))?;
    let doc = parse_markdown(id, stem, document.to_markdown());
    if doc.text.trim().is_empty() {
        bail!("no text in it");
    }
    Ok(doc)
}

/// A PDF page by page (numbered from 1), each page cut into the sections its outline gives it; its title
/// the file's stem. A PDF without a text layer (scanned) or that needs a password is refused, saying so.
fn pdf(id: &str, stem: &str, bytes: &[u8]) -> anyhow::Result<Document> {
    // The reader walks untrusted bytes: a panic in it refuses the file, not the run.
    let pages = std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem_by_pages(bytes))
        .map_err(|_| anyhow::anyhow!("the PDF reader failed on it (a damaged or unusual PDF)"))?
        .map_err(|e| match e.to_string() {
            m if m.to_lowercase().contains("decrypt") || m.to_lowercase().contains("encrypt") => {
                anyhow::anyhow!("encrypted: it needs a password ({m})")
            }
            m => anyhow::anyhow!("not a readable PDF: {m}"),
        })?;
    let texts: Vec<String> = pages.iter().map(|page| page_text(page)).collect();
    // Its outline cuts the pages into sections; a file without one, or whose outline cannot be read, has none.
    let marks = std::panic::catch_unwind(|| {
        lopdf::Document::load_mem(bytes).map(|doc| pdf_outline::bookmarks(&doc)).unwrap_or_default()
    })
    .unwrap_or_default();
    let parts: Vec<Part> = pdf_outline::sectioned_pages(&marks, &texts)
        .into_iter()
        .zip(1u32..)
        .flat_map(|(pieces, page)| {
            pieces.into_iter().map(move |(section, text)| Part { section, page: Some(page), text })
        })
        .collect();
    if parts.is_empty() {
        bail!("no text layer in its {} pages (a scanned PDF?): run OCR on it first", pages.len());
    }
    let text = parts.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\n\n");
    Ok(plain(id.to_string(), stem.to_string(), text, parts))
}

/// A page's text as paragraphs: its lines' white space collapsed, blank lines kept as paragraph breaks.
fn page_text(page: &str) -> String {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in page.lines().map(str::trim) {
        if line.is_empty() {
            if !current.is_empty() {
                paragraphs.push(current.join(" ").split_whitespace().collect::<Vec<_>>().join(" "));
                current.clear();
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        paragraphs.push(current.join(" ").split_whitespace().collect::<Vec<_>>().join(" "));
    }
    paragraphs.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_s_chrome_is_dropped_and_its_headings_are_sections() {
        let page = "<html><head><title>Widget Manual</title><style>p{}</style></head><body>\
                    <nav><a href='/'>Home</a> | <a href='/docs'>Docs</a></nav>\
                    <header>Site banner</header>\
                    <main><h2>Configuration</h2><p>The <code>retries</code> option defaults to 3.</p>\
                    <table><tr><th>Option</th><th>Default</th></tr><tr><td>timeout</td><td>30 s</td></tr></table>\
                    <h2>Usage</h2><ul><li>Start it.</li><li>Stop it.</li></ul></main>\
                    <footer>Copyright</footer><script>track()</script></body></html>";
        let doc = html("manual.html", "manual", page);
        assert_eq!(doc.title, "Configuration", "the first heading");
        for chrome in ["Home", "Site banner", "Copyright", "track"] {
            assert!(!doc.text.contains(chrome), "{chrome:?} in {:?}", doc.text);
        }
        assert!(doc.text.contains("The retries option defaults to 3."), "{}", doc.text);
        assert!(doc.text.contains("Option: timeout; Default: 30 s."), "a row with its header: {}", doc.text);
        let sections: Vec<Option<&str>> = doc.parts.iter().map(|p| p.section.as_deref()).collect();
        assert_eq!(sections, [Some("Configuration"), Some("Usage")]);
        assert!(doc.parts[1].text.contains("Start it.") && doc.parts[1].text.contains("Stop it."));
        let untitled = html("p.html", "p", "<html><head><title> The  Page </title></head><body><p>x</p></body></html>");
        assert_eq!(untitled.title, "The Page", "no heading: the page's <title>");
    }

    #[test]
    fn bad_files_are_refused_with_why() {
        let err = read(Path::new("a.pdf"), b"not a pdf".to_vec()).unwrap_err().to_string();
        assert!(err.contains("PDF"), "{err}");
        let err = read(Path::new("a.docx"), b"not a zip".to_vec()).unwrap_err().to_string();
        assert!(err.contains(".docx"), "{err}");
        let err = read(Path::new("a.exe"), Vec::new()).unwrap_err().to_string();
        assert!(err.contains("unsupported file type 'exe'") && err.contains(".pdf"), "{err}");
        assert!(read(Path::new("a.md"), vec![0xff, 0xfe]).unwrap_err().to_string().contains("UTF-8"));
    }

    #[test]
    fn a_page_s_lines_become_paragraphs() {
        assert_eq!(
            page_text("  First line\ncontinues here.\n\n\nSecond   paragraph.\n"),
            "First line continues here.\n\nSecond paragraph."
        );
    }
}
