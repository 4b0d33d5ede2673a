// The gateway's page in headless Chromium, driven by playwright-core: type a question, wait for the answer and
// its citations, click the first citation, read the passage, keep a screenshot. Prints one JSON line.
//
// Usage: node page.cjs URL QUESTION EXPECTED SCREENSHOT   (NODE_PATH has playwright-core; CHROMIUM the browser)
const { chromium } = require("playwright-core");

(async () => {
  const [url, question, expected, screenshot] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox"],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(url);
    await page.fill("#q", question);
    await page.click("#go");
    await page.waitForFunction(
      (want) => (document.querySelector("#short")?.textContent || "").includes(want),
      expected,
      { timeout: 60000 },
    );
    await page.waitForSelector("#citations li a.cite", { timeout: 30000 });
    const steps = await page.$$eval("#steps li", (items) => items.map((li) => li.textContent));
    await page.click("#citations li a.cite");
    await page.waitForSelector("#passage:not([hidden])", { timeout: 10000 });
    const passage = await page.textContent("#passage-text");
    const meta = await page.textContent("#meta");
    await page.screenshot({ path: screenshot, fullPage: true });
    console.log(JSON.stringify({ short: await page.textContent("#short"), steps, passage, meta, errors }));
  } finally {
    await browser.close();
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
