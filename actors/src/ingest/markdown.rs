//! Markdown as a person reads it: the text of each block as its own paragraph, with no link syntax, HTML tags or
//! images; headings, list items and table rows as paragraphs of their own, each row with its table's header; code
//! blocks kept whole and fenced, so a reader can tell code from prose; and the text cut into sections, each under
//! the heading it falls under, which citations name. HTML and Office documents are read through it (`formats.rs`).

use pulldown_cmark::{BrokenLink, CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// A Markdown file as text: its title (the first level-one heading, else the first heading: a book's chapter files
/// often open at level two) when it has one, and its paragraphs separated by blank lines. A file whose text opens
/// before any heading has no title of its own: its headings name its sections ("Example", "Static paths" in an API
/// item's page), and the caller names it by its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub title: Option<String>,
    pub text: String,
    /// The text by heading, in order: what comes before the first heading has none.
    pub sections: Vec<Section>,
}

/// The paragraphs under one heading (the heading's own paragraph first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub heading: Option<String>,
    pub text: String,
}

/// Where the renderer is: what the text it receives belongs to.
#[derive(Default)]
struct Renderer {
    /// Each paragraph with the heading it falls under.
    paragraphs: Vec<(Option<String>, String)>,
    /// The heading the text now falls under.
    heading: Option<String>,
    /// The block being written.
    current: String,
    title: Option<String>,
    /// Whether `title` is a level-one heading (else the first heading, until a level-one heading comes).
    h1: bool,
    /// Inside an image: its alt text is not the page's text.
    image: usize,
    /// Inside a code block: kept verbatim.
    code: Option<String>,
    /// The table's header cells, and the row being read.
    header: Vec<String>,
    row: Vec<String>,
    in_head: bool,
    metadata: bool,
}

impl Renderer {
    /// The block written so far, its white space collapsed; the block is emptied.
    fn take(&mut self) -> String {
        let text = self.current.split_whitespace().collect::<Vec<_>>().join(" ");
        self.current.clear();
        text
    }

    fn flush(&mut self) {
        let text = self.take();
        if !text.is_empty() {
            self.paragraph(text);
        }
    }

    fn paragraph(&mut self, text: String) {
        self.paragraphs.push((self.heading.clone(), text));
    }

    fn push(&mut self, text: &str) {
        if self.image > 0 || self.metadata {
            return;
        }
        match &mut self.code {
            Some(code) => code.push_str(text),
            None => self.current.push_str(text),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { .. } => self.flush(),
            Tag::CodeBlock(_) => {
                self.flush();
                self.code = Some(String::new());
            }
            Tag::Image { .. } => self.image += 1,
            Tag::MetadataBlock(_) => self.metadata = true,
            Tag::TableHead => {
                self.flush();
                self.in_head = true;
                self.header.clear();
            }
            Tag::TableRow => self.row.clear(),
            Tag::Paragraph
            | Tag::Item
            | Tag::BlockQuote(_)
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::HtmlBlock
            | Tag::TableCell => self.flush(),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(level) => {
                let text = self.take();
                if text.is_empty() {
                    return;
                }
                // Text before the first heading leaves the file untitled: no later heading takes the title.
                let first = self.title.is_none() && self.paragraphs.is_empty();
                if first || self.title.is_some() && level == HeadingLevel::H1 && !self.h1 {
                    self.h1 = level == HeadingLevel::H1;
                    self.title = Some(text.clone());
                }
                self.heading = Some(html_escape::decode_html_entities(&text).into_owned());
                self.paragraph(text);
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.code.take() {
                    let code = code.trim_end();
                    if !code.trim().is_empty() {
                        self.paragraph(format!("```\n{code}\n```"));
                    }
                }
            }
            TagEnd::Image => self.image = self.image.saturating_sub(1),
            TagEnd::MetadataBlock(_) => self.metadata = false,
            TagEnd::TableCell => {
                let cell = self.take();
                if self.in_head { self.header.push(cell) } else { self.row.push(cell) }
            }
            TagEnd::TableHead => self.in_head = false,
            TagEnd::TableRow => {
                let cells: Vec<String> = self
                    .row
                    .iter()
                    .enumerate()
                    .filter(|(_, cell)| !cell.is_empty())
                    .map(|(i, cell)| match self.header.get(i).filter(|h| !h.is_empty()) {
                        Some(head) => format!("{head}: {cell}"),
                        None => cell.clone(),
                    })
                    .collect();
                if !cells.is_empty() {
                    let row = cells.join("; ");
                    let end = if row.ends_with(['.', '!', '?']) { "" } else { "." };
                    self.paragraph(format!("{row}{end}"));
                }
                self.row.clear();
            }
            TagEnd::Paragraph
            | TagEnd::Item
            | TagEnd::BlockQuote(_)
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::HtmlBlock
            | TagEnd::Table => self.flush(),
            _ => {}
        }
    }
}

/// A reference without a definition that names a code item, as rustdoc's intra-doc links do (`[Router::has_routes]`,
/// ``[`HandleErrorLayer`]``), is a link: its text is read without the brackets. Brackets around words ("[1]", "[see
/// below]") stay text.
fn code_reference(link: BrokenLink<'_>) -> Option<(CowStr<'_>, CowStr<'_>)> {
    let name = link.reference.trim_matches('`');
    let code = name.starts_with(|c: char| c.is_alphabetic() || c == '_') && !name.contains(char::is_whitespace);
    code.then(|| (CowStr::from(""), CowStr::from("")))
}

/// Renders Markdown to the text a person reads (see the module's doc).
pub fn render(markdown: &str) -> Rendered {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_DEFINITION_LIST;
    let mut r = Renderer::default();
    for event in Parser::new_with_broken_link_callback(markdown, options, Some(code_reference)) {
        match event {
            Event::Start(tag) => r.start(tag),
            Event::End(tag) => r.end(tag),
            Event::Text(text) | Event::Code(text) | Event::InlineMath(text) | Event::DisplayMath(text) => r.push(&text),
            Event::SoftBreak | Event::HardBreak => r.push(if r.code.is_some() { "\n" } else { " " }),
            // HTML is markup, not text: a `<span class="filename">` wrapper's text comes as text events of its own.
            Event::Html(_) | Event::InlineHtml(_) | Event::FootnoteReference(_) | Event::TaskListMarker(_) => {}
            Event::Rule => r.flush(),
        }
    }
    r.flush();
    let decoded = |text: &str| html_escape::decode_html_entities(text).into_owned();
    let text = r.paragraphs.iter().map(|(_, p)| p.as_str()).collect::<Vec<_>>().join("\n\n");
    let mut sections: Vec<Section> = Vec::new();
    for (heading, paragraph) in r.paragraphs {
        match sections.last_mut() {
            Some(last) if last.heading == heading => {
                last.text.push_str("\n\n");
                last.text.push_str(&decoded(&paragraph));
            }
            _ => sections.push(Section { heading, text: decoded(&paragraph) }),
        }
    }
    Rendered { title: r.title, text: decoded(&text), sections }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_images_and_html_leave_only_their_text() {
        let md = "# The Guide\n\nSee [the keyword](ch07-04-use.html) and ![logo](img/logo.svg) here.\n\n\
                  <span class=\"caption\">Listing 1</span>: a *short* `fn main` &amp; more.\n";
        let r = render(md);
        assert_eq!(r.title.as_deref(), Some("The Guide"));
        assert_eq!(r.text, "The Guide\n\nSee the keyword and here.\n\nListing 1: a short fn main & more.");
    }

    #[test]
    fn an_intra_doc_link_leaves_its_text_and_bracketed_words_stay() {
        let md = "That is done with [HandleErrorLayer], by calling [`Router::has_routes`] or [a router][Router].\n\n\
                  See [1] and [see below].\n";
        assert_eq!(
            render(md).text,
            "That is done with HandleErrorLayer, by calling Router::has_routes or a router.\n\nSee [1] and [see below]."
        );
    }

    #[test]
    fn the_text_is_cut_into_sections_under_their_headings() {
        let r = render("Intro text.\n\n# Guide\n\nFirst.\n\n## Install &amp; run\n\nSecond.\n\nThird.\n");
        let sections: Vec<(Option<&str>, &str)> =
            r.sections.iter().map(|s| (s.heading.as_deref(), s.text.as_str())).collect();
        assert_eq!(
            sections,
            [
                (None, "Intro text."),
                (Some("Guide"), "Guide\n\nFirst."),
                (Some("Install & run"), "Install & run\n\nSecond.\n\nThird."),
            ]
        );
        assert_eq!(r.text, sections.iter().map(|(_, t)| *t).collect::<Vec<_>>().join("\n\n"));
    }

    #[test]
    fn a_file_that_opens_with_text_takes_no_heading_for_its_title() {
        let r = render("Turn off checks for compatibility with 0.7.\n\n# Example\n\nSome code.\n");
        assert_eq!(r.title, None, "an API item's page: its file names it, not its first example");
        assert_eq!(r.sections[1].heading.as_deref(), Some("Example"));
        let r = render("<a id=\"intro\"></a>\n![logo](logo.svg)\n\n## Closures\n\nText.\n\n# Later\n");
        assert_eq!(r.title.as_deref(), Some("Later"), "markup and images before a heading are no text");
    }

    #[test]
    fn headings_items_and_rows_are_paragraphs_and_code_is_fenced_whole() {
        let md = "## Integer Types\nInteger types default to `i32`.\n\n- one item\n- another\n\n\
                  | Option | Default |\n|---|---|\n| retries | 3 |\n| `max_body_size` | 1 MiB |\n\n\
                  ```rust\nfn main() {\n    let x = 5;\n}\n```\n";
        let r = render(md);
        assert_eq!(r.title.as_deref(), Some("Integer Types"), "no level-one heading: the first heading");
        let paragraphs: Vec<&str> = r.text.split("\n\n").collect();
        assert_eq!(
            paragraphs,
            [
                "Integer Types",
                "Integer types default to i32.",
                "one item",
                "another",
                "Option: retries; Default: 3.",
                "Option: max_body_size; Default: 1 MiB.",
                "```\nfn main() {\n    let x = 5;\n}\n```",
            ]
        );
    }
}
