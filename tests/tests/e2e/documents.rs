//! Documents as users bring them, through `sleuth ingest docs` as a user runs it, embedded: a directory with a PDF
//! of two pages, a web page with navigation chrome, a Word document with a heading and a table, and a damaged PDF.
//! The damaged file is skipped with why and the rest are ingested; `sleuth ask` then cites the PDF by its page and
//! the section its bookmarks put that page in, and
//! the Word document by the sections its passage spans. The files are written by the test itself (lopdf, office_oxide).

use std::{path::Path, process::Command};

use lopdf::{
    Document, Object, Stream,
    content::{Content, Operation},
    dictionary,
};
use sleuth_messages::{AskReply, Outcome};
use sleuth_tests::process::sleuth_bin;

/// A PDF with one page per entry of `pages`, each a few lines of Courier, and an outline of one bookmark per
/// entry of `marks` (its title, and the 0-based page it points to).
fn pdf(pages: &[&[&str]], marks: &[(&str, usize)]) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier" });
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids: Vec<Object> = Vec::new();
    for lines in pages {
        let mut operations = vec![
            Operation::new("BT", vec![]),
            Operation::new("Tf", vec!["F1".into(), 12.into()]),
            Operation::new("TL", vec![16.into()]),
            Operation::new("Td", vec![72.into(), 720.into()]),
        ];
        for line in *lines {
            operations.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
            operations.push(Operation::new("T*", vec![]));
        }
        operations.push(Operation::new("ET", vec![]));
        let content = Content { operations }.encode().unwrap();
        let content = doc.add_object(Stream::new(dictionary! {}, content));
        let page = doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id, "Contents" => content });
        kids.push(page.into());
    }
    let count = kids.len() as i64;
    let tree = dictionary! {
        "Type" => "Pages", "Kids" => kids.clone(), "Count" => count, "Resources" => resources,
        "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
    };
    doc.objects.insert(pages_id, Object::Dictionary(tree));
    let outlines = doc.new_object_id();
    let entries: Vec<_> = marks.iter().map(|_| doc.new_object_id()).collect();
    for (i, &(title, page)) in marks.iter().enumerate() {
        let mut entry = dictionary! {
            "Title" => Object::string_literal(title), "Parent" => outlines,
            "Dest" => vec![kids[page].clone(), "Fit".into()],
        };
        if let Some(next) = entries.get(i + 1) {
            entry.set("Next", *next);
        }
        doc.objects.insert(entries[i], Object::Dictionary(entry));
    }
    let mut outline = dictionary! { "Type" => "Outlines" };
    if let (Some(first), Some(last)) = (entries.first(), entries.last()) {
        outline.set("First", *first);
        outline.set("Last", *last);
    }
    doc.objects.insert(outlines, Object::Dictionary(outline));
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id, "Outlines" => outlines });
    doc.trailer.set("Root", catalog);
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    bytes
}

fn docx(path: &Path) {
    let mut writer = office_oxide::docx::write::DocxWriter::new();
    writer
        .add_heading("Maintenance", 1)
        .add_paragraph("The lighthouse lamp at Port Velm is serviced every spring.")
        .add_heading("Spare parts", 2)
        .add_table(&[
            vec!["Part", "Supplier"],
            vec!["Fresnel lens", "Kestrel Optics"],
            vec!["Clockwork", "Orrin & Sons"],
        ]);
    writer.write_to(std::fs::File::create(path).unwrap()).unwrap();
}

const PAGE: &str = "<html><head><title>Harbor notes</title></head><body>\
    <nav><a href='/'>Home</a> <a href='/about'>About us</a></nav>\
    <main><h1>Harbor notes</h1><p>The Port Velm harbor master is Ilse Varga.</p></main>\
    <footer>Subscribe to the newsletter</footer></body></html>";

fn sleuth(data: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new(sleuth_bin())
        .args(args)
        .env("SLEUTH__DATA_DIR", data)
        .env("SLEUTH__RETRIEVAL__DEMO_CORPUS", "false")
        .output()
        .expect("run sleuth");
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "sleuth {args:?} failed:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

fn ask(data: &Path, question: &str) -> sleuth_messages::AgentResponse {
    let (stdout, _) = sleuth(data, &["ask", question, "--json"]);
    let reply: AskReply = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    match reply.outcome {
        Outcome::Answer(answer) => answer,
        Outcome::Error(e) => panic!("{question}: {e}"),
    }
}

#[test]
fn a_directory_of_pdf_html_and_docx_is_ingested_and_answers_cite_the_page_and_section() {
    let files = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let report = pdf(
        &[
            &["Zephyr Vault annual report.", "The vault was built in 1902 by the harbor guild."],
            &["Access.", "The Zephyr Vault door code is 4471.", "Only the harbor master may open it."],
        ],
        &[("History", 0), ("Access", 1)],
    );
    std::fs::write(files.path().join("report.pdf"), report).unwrap();
    std::fs::write(files.path().join("harbor.html"), PAGE).unwrap();
    docx(&files.path().join("maintenance.docx"));
    std::fs::create_dir(files.path().join("old")).unwrap();
    std::fs::write(files.path().join("old/damaged.pdf"), b"%PDF-1.5 this is not really a PDF").unwrap();

    let dir = files.path().to_str().unwrap();
    let (stdout, stderr) = sleuth(data.path(), &["ingest", "docs", dir]);
    assert!(stdout.contains("3 files (2 PDF pages") && stdout.contains(", 1 skipped"), "{stdout}");
    assert!(stderr.contains("damaged.pdf") && stderr.contains("skipped"), "the skipped file and why: {stderr}");

    let answer = ask(data.path(), "What is the Zephyr Vault door code?");
    assert!(answer.answer.contains("4471"), "{}", answer.answer);
    let by_page = answer.citations.iter().find(|c| c.doc_id.ends_with("report.pdf")).expect("the PDF is cited");
    assert_eq!(by_page.page, Some(2), "{:?}", answer.citations);
    assert_eq!(by_page.place(), "report › Access, p. 2", "the page's section, from the PDF's bookmarks");

    let answer = ask(data.path(), "Who supplies the Fresnel lens?");
    assert!(answer.answer.contains("Kestrel Optics"), "{}", answer.answer);
    let cited = answer.citations.iter().find(|c| c.doc_id.ends_with("maintenance.docx")).expect("the DOCX is cited");
    let section = cited.section.as_deref().unwrap_or_default();
    assert!(section.contains("Spare parts"), "the sections the passage spans: {:?}", answer.citations);

    let answer = ask(data.path(), "Who is the Port Velm harbor master?");
    assert!(answer.answer.contains("Ilse Varga"), "{}", answer.answer);
    assert!(!answer.answer.contains("newsletter") && !answer.answer.contains("About us"), "{}", answer.answer);

    // Again: nothing changed, nothing written; the damaged file is still reported.
    let (stdout, stderr) = sleuth(data.path(), &["ingest", "docs", dir, "--exclude", "old/**"]);
    assert!(stdout.contains(", 0 skipped") && stdout.contains("3 unchanged"), "{stdout}");
    assert!(!stderr.contains("damaged.pdf"), "excluded: {stderr}");
}
