// Drives the dashboard in headless Chromium the way its operator does: logs in by the
// printed URL, edits a memory through the page's form, and watches the sessions page reload
// itself when a new session calls the model behind it. Prints one JSON line of what it saw;
// any failure exits non-zero with the reason on stderr.
//
// Arguments: CHROMIUM BASE_URL TOKEN PROJECT MEMORY_ID EDITED_TEXT NEW_SESSION CALL_BODY
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [executablePath, base, token, project, memoryId, edited, newSession, callBody] =
  process.argv.slice(2);
const seconds = (count) => count * 1000;

// A fresh profile, and no background traffic: the test machine has no network but loopback.
const profile = mkdtempSync(join(tmpdir(), "mc-dash-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
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

  // The login URL sets the cookie and lands on the sessions page.
  await page.goto(`${base}/_magic-context/ui/login?token=${token}`);
  const landed = await page.locator("h1").first().textContent();

  // Edit the memory through its form: the script posts JSON with the token header, then
  // reloads the page, which shows the stored text.
  const memories = `${base}/_magic-context/ui/memories?project=${encodeURIComponent(project)}`;
  await page.goto(memories);
  const form = page.locator(`article.memory[data-id="${memoryId}"] form`).first();
  await form.locator("textarea").fill(edited);
  await Promise.all([
    page.waitForEvent("load", { timeout: seconds(10) }),
    form.locator("button[type=submit]").click(),
  ]);
  const shown = await page
    .locator(`article.memory[data-id="${memoryId}"] textarea`)
    .inputValue();

  // A session that calls the model while the sessions page is open: the page polls the API
  // it watches and reloads itself, now listing it.
  const watching = page.waitForResponse((response) =>
    response.url().includes("/_magic-context/api/sessions"),
  );
  await page.goto(`${base}/_magic-context/ui/`);
  await watching;
  const before = (await page.content()).includes(newSession);
  const reloaded = page.waitForEvent("load", { timeout: seconds(20) });
  const answer = await fetch(`${base}/v1/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-magic-context-session": newSession,
      "x-magic-context-project": project,
    },
    body: callBody,
  });
  if (!answer.ok) throw new Error(`the model call was refused: ${answer.status}`);
  await reloaded;
  const after = (await page.content()).includes(newSession);

  console.log(JSON.stringify({ landed, shown, before, after, errors }));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
