// Drives the dashboard in headless Chromium the way its operator does: logs in by the
// printed URL, reads a session's timeline, edits a memory through its form, tries a bad and
// then a good configuration in the editor, and watches the sessions page reload itself when
// a new session calls the model. Takes one JSON argument (what to do, below); prints one
// JSON line of what it saw; any failure exits non-zero with the reason on stderr. Each page
// is kept as a screenshot in `screenshots`.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const run = JSON.parse(process.argv[2]);
const { base, token, project, session } = run;
const seconds = (count) => count * 1000;

// A fresh profile, and no background traffic: the test machine has no network but loopback.
const profile = mkdtempSync(join(tmpdir(), "mc-dash-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: run.chromium,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  // The editor's refusal is a 400 the browser logs as a failed load; only then is one
  // expected.
  let refusalExpected = false;
  page.on("console", (message) => {
    const refused = message.text().includes("status of 400");
    if (message.type() === "error" && !(refusalExpected && refused)) errors.push(message.text());
  });
  const keep = (name) => page.screenshot({ path: join(run.screenshots, `${name}.png`), fullPage: true });
  const submitAndReload = (form) =>
    Promise.all([
      page.waitForEvent("load", { timeout: seconds(10) }),
      form.locator("button[type=submit]").click(),
    ]);

  // The login URL sets the cookie and lands on the sessions page.
  await page.goto(`${base}/_magic-context/ui/login?token=${token}`);
  const landed = await page.locator("h1").first().textContent();
  await keep("sessions");

  // A session's timeline: one bar per call, a marker on each bust.
  await page.goto(`${base}/_magic-context/ui/sessions/${encodeURIComponent(session)}`);
  const bars = await page.locator("svg.timeline g.call").count();
  const busts = await page.locator("svg.timeline path.bust").count();
  await keep("session");

  // A memory edited through its form: the script posts JSON with the token header, then
  // reloads the page, which shows the stored text.
  await page.goto(`${base}/_magic-context/ui/memories?project=${encodeURIComponent(project)}`);
  const memory = page.locator(`article.memory[data-id="${run.memoryId}"]`);
  const edit = memory.locator("form").first();
  await edit.locator("textarea").fill(run.edited);
  await submitAndReload(edit);
  const shown = await memory.locator("textarea").inputValue();
  await keep("memories");

  // The configuration editor: a bad value is refused with the reason and the page stays;
  // a good text (comments and all) is saved and shown after the reload.
  await page.goto(`${base}/_magic-context/ui/config`);
  const editor = page.locator('form[data-api="/_magic-context/api/config"]').first();
  await editor.locator("textarea").fill(run.configBad);
  refusalExpected = true;
  await editor.locator("button[type=submit]").click();
  await page.locator("#flash").filter({ hasText: "not saved" }).waitFor({ timeout: seconds(10) });
  refusalExpected = false;
  const refusal = await page.locator("#flash").textContent();
  await editor.locator("textarea").fill(run.configGood);
  await submitAndReload(editor);
  const configShown = await editor.locator("textarea").inputValue();
  await keep("config");

  await page.goto(`${base}/_magic-context/ui/search?q=${encodeURIComponent(run.searchFor)}`);
  const searchHits = await page.locator("#search-results tbody tr").count();
  await keep("search");
  await page.goto(`${base}/_magic-context/ui/runs`);
  await keep("runs");

  // A session that calls the model while the sessions page is open: the page polls the API
  // it watches and reloads itself, now listing it.
  const watching = page.waitForResponse((response) =>
    response.url().includes("/_magic-context/api/sessions"),
  );
  await page.goto(`${base}/_magic-context/ui/`);
  await watching;
  const before = (await page.content()).includes(run.newSession);
  const reloaded = page.waitForEvent("load", { timeout: seconds(20) });
  const answer = await fetch(`${base}/v1/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-magic-context-session": run.newSession,
      "x-magic-context-project": project,
    },
    body: run.callBody,
  });
  if (!answer.ok) throw new Error(`the model call was refused: ${answer.status}`);
  await reloaded;
  const after = (await page.content()).includes(run.newSession);

  console.log(
    JSON.stringify({
      landed, bars, busts, shown, refusal, configShown, searchHits, before, after, errors,
    }),
  );
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
