// driver.cjs URL RESULTS_DIR SCREENSHOTS_DIR
//
// Opens the code-server workbench in headless Chromium (which starts the extension host, and so the
// API half in consumer/), waits for the API half to finish, then uses VS Code's own Chat view the
// way a person does: makes the Cursor models visible, picks one in the model picker, chooses Agent
// or Ask in the mode dropdown, types, presses Enter, presses + for a new chat. It records what the
// person saw (answer text, thinking block, errors, chat title) in RESULTS_DIR/chat-result.json and
// takes screenshots; check.cjs judges. Exit 0 when every step could be carried out.
//
// Each typed message ends with a `[[double:{…}]]` directive that scripts the CLI test double's
// answer (the double strips it), and starts with a tag ("e2e-chat agent-t1") by which check.cjs
// finds the CLI run in the double's record.
//
// Last, one message in Ask mode is scripted to fail (rate limit): the error box must be clean.
//
// Around that: the first-run walkthrough (opened before and after, its steps' ticks recorded),
// Cursor Bridge: Check Setup (its report's text and a screenshot), and the picker's per-model
// menu: GPT-5.5 is one entry with a Thinking Effort menu; one message with the default effort,
// one with High (check.cjs finds the SKU each ran in the double's record).
//
// Last, the Copilot tools phase (tools.cjs): `cursorBridge.tools: "copilot"` on the session's backend,
// Cursor's model calling Copilot's file and terminal tools.
//
// Env: PLAYWRIGHT_CORE (the playwright-core folder), CHROMIUM, E2E_API_TIMEOUT_S (default 300),
// E2E_STEP_TIMEOUT_S (one answer, default 120), E2E_CHAT_VIEW=0 (only wait for the API half),
// E2E_TOOLS_ONLY=1 (only the tools phase), E2E_TOOLS_BACKENDS (set by session.rs), E2E_TERMINAL_WAIT_S (tools.cjs),
// E2E_USER_SETTINGS (the user's settings.json, set by session.rs).

const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
const fs = require('fs');
const path = require('path');

const [url, resultsDir, shotsDir] = process.argv.slice(2);
if (!url || !resultsDir || !shotsDir) {
  console.error('usage: driver.cjs URL RESULTS_DIR SCREENSHOTS_DIR');
  process.exit(2);
}
const API_TIMEOUT = Number(process.env.E2E_API_TIMEOUT_S || 300) * 1000;
const STEP_TIMEOUT = Number(process.env.E2E_STEP_TIMEOUT_S || 120) * 1000;
const MODEL_NAME = 'Composer 2.5';
const VARIANT_MODEL = 'GPT-5.5';

// What the person types, per mode: two turns in one chat, then a new chat. Non-ASCII that Debian's
// default fonts draw (CJK and emoji would show as boxes in the screenshots; the API half covers them).
const SCRIPT = {
  Agent: [
    { id: 'agent-t1', words: 'first question in agent mode', answer: 'Agent turn one ✓ — Grüße aus Köln', thinking: 'Pondering agent turn one: größer, naïve…' },
    { id: 'agent-t2', words: 'a follow-up in the same chat', answer: 'Agent turn two ✓ — same chat, résumé', thinking: 'Second thoughts on turn two' },
    { id: 'agent-new', words: 'a new chat in agent mode', answer: 'Agent new chat ✓ — fresh start', thinking: 'A fresh chat needs fresh thinking', newChat: true },
  ],
  Ask: [
    { id: 'ask-t1', words: 'first question in ask mode', answer: 'Ask turn one ✓ — naïve question', thinking: 'Pondering ask turn one' },
    { id: 'ask-t2', words: 'a follow-up in ask mode', answer: 'Ask turn two ✓ — façade', thinking: 'Second thoughts in ask mode' },
    { id: 'ask-new', words: 'a new chat in ask mode', answer: 'Ask new chat ✓ — ça va', thinking: 'Fresh ask thinking', newChat: true },
    // A transient failure (the double says "rate limit exceeded"): an error box, cleanly worded.
    { id: 'ask-error', words: 'this one is rate-limited', scenario: { fail: 'rateLimit' }, expectError: true },
  ],
};

fs.mkdirSync(shotsDir, { recursive: true });
const t0 = Date.now();
const logLines = [];
const log = (...a) => {
  const line = `[driver +${((Date.now() - t0) / 1000).toFixed(1)}s] ${a.join(' ')}`;
  console.log(line);
  logLines.push(line);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const result = { done: false, sends: [], actions: [], failures: [] };
const writeResult = () => {
  const file = path.join(resultsDir, 'chat-result.json');
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(result, null, 2));
  fs.renameSync(`${file}.tmp`, file);
};
const apiDone = () => {
  try {
    return JSON.parse(fs.readFileSync(path.join(resultsDir, 'api-result.json'), 'utf8')).done === true;
  } catch {
    return false;
  }
};

async function main() {
  const profile = fs.mkdtempSync(path.join(process.env.TMPDIR || resultsDir, 'chromium-profile-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1600, height: 1000 },
    // The network flags keep Chromium from reaching out (there is nothing to reach in the test's
    // network namespace, and without them it retries many connections at start-up).
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
    ],
  });
  const page = browser.pages()[0] || (await browser.newPage());
  const consoleLines = [];
  page.on('console', (m) => consoleLines.push(`[${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => consoleLines.push(`[pageerror] ${e.message}`));
  const external = new Set();
  browser.on('request', (r) => {
    const u = r.url();
    if (/^(https?|wss?):/.test(u) && !/^(https?|wss?):\/\/(127\.0\.0\.1|localhost)[:/]/.test(u)) external.add(u.split('?')[0]);
  });

  let shotNo = 0;
  const shot = async (name) => {
    const file = path.join(shotsDir, `${String(++shotNo).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file, animations: 'disabled' }).catch((e) => log('screenshot failed:', e.message));
    return path.basename(file);
  };
  const chat = () => page.locator('.part.auxiliarybar');
  const input = () => chat().locator('.interactive-input-part').first();
  const modelLabel = async () => ((await input().locator('a.model-picker-name').first().textContent({ timeout: 2000 }).catch(() => '')) || '').trim();
  const modeDropdown = () => input().locator('.monaco-dropdown').filter({ hasText: /^(Agent|Ask|Plan|Edit)\b/ }).first();
  const modeLabel = async () => ((await modeDropdown().textContent({ timeout: 2000 }).catch(() => '')) || '').trim();
  const chatTitle = async () => ((await chat().locator('.chat-view-title-label-container').first().textContent({ timeout: 1000 }).catch(() => '')) || '').trim();
  const escape = async (n = 1) => {
    for (let i = 0; i < n; i++) {
      await page.keyboard.press('Escape');
      await sleep(150);
    }
  };

  async function runCommand(label) {
    await escape();
    await page.keyboard.press('F1');
    const box = page.locator('.quick-input-widget input').first();
    await box.waitFor({ state: 'visible', timeout: 15000 });
    await page.keyboard.type(label, { delay: 10 });
    // The list filters as one types: wait until the command is the highlighted entry.
    await page.locator('.quick-input-widget .monaco-list-row.focused').filter({ hasText: label }).first().waitFor({ timeout: 15000 });
    await page.keyboard.press('Enter');
  }

  /** Makes the models visible (and starts the built-in Copilot Chat, which runs the Chat view). */
  async function manageModels() {
    log('person: F1 > Chat: Manage Language Models');
    await runCommand('Chat: Manage Language Models');
    await page.getByText(MODEL_NAME, { exact: true }).first().waitFor({ timeout: 30000 });
    result.actions.push({ action: 'manageLanguageModels', screenshot: await shot('manage-language-models') });
    await escape(2);
    await runCommand('View: Close All Editors');
    await until('the editors to close', async () => (await page.locator('.editor-group-container .tab').count()) === 0, 10000).catch(() =>
      log('an editor stayed open'),
    );
  }

  /** Polls `probe` until it returns something truthy; throws after `ms`. */
  async function until(what, probe, ms = 15000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await sleep(100);
    }
  }

  async function ensureModel(name = MODEL_NAME) {
    for (let attempt = 0; attempt < 3; attempt++) {
      if ((await modelLabel()) === name) return;
      await escape();
      await input().locator('a.model-picker-name').first().click();
      const options = page.locator('.action-widget [role=option]');
      await options.first().waitFor({ timeout: 10000 });
      const option = page.locator(`[role=option][aria-label^="${name},"]`).first();
      const other = page.locator('[role=option][aria-label="Other Models"]').first();
      if (!(await option.count()) && (await other.count())) {
        log('person: model picker > Other Models');
        await other.click();
        await option.waitFor({ timeout: 5000 }).catch(() => undefined);
      }
      if (await option.count()) {
        log(`person: model picker > ${name}`);
        if (!result.actions.some((a) => a.action === 'modelPicker')) result.actions.push({ action: 'modelPicker', screenshot: await shot('model-picker') });
        await option.click();
        await until(`the model picker to show ${name}`, async () => (await modelLabel()) === name, 5000).catch(() => undefined);
        continue;
      }
      const offered = await options.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
      log(`model picker has no ${name}; it offers ${JSON.stringify(offered)}`);
      await escape(2);
      await manageModels();
    }
    const now = await modelLabel();
    if (now !== name) throw new Error(`could not pick ${name} in the model picker (it shows "${now}")`);
  }

  async function setMode(name) {
    if ((await modeLabel()) === name) return;
    await escape();
    await modeDropdown().click();
    const option = page.locator(`[role=menuitemcheckbox][aria-label^="${name},"], [role=option][aria-label^="${name},"]`).first();
    await option.waitFor({ timeout: 10000 });
    if (!result.actions.some((a) => a.action === 'modeDropdown')) result.actions.push({ action: 'modeDropdown', screenshot: await shot('mode-dropdown') });
    log(`person: mode dropdown > ${name}`);
    await option.click();
    await until(`the mode dropdown to show ${name}`, async () => (await modeLabel()) === name, 10000);
  }

  /** Welcome: Open Walkthrough… > ours; the steps as shown (title, done or not). */
  async function walkthrough(name) {
    log('person: F1 > Welcome: Open Walkthrough... > Get started with Cursor Bridge');
    await runCommand('Welcome: Open Walkthrough...');
    await page.locator('.quick-input-widget input').first().waitFor({ state: 'visible', timeout: 15000 });
    await page.keyboard.type('Get started with Cursor Bridge', { delay: 10 });
    await page.locator('.quick-input-widget .monaco-list-row.focused').filter({ hasText: 'Cursor Bridge' }).first().waitFor({ timeout: 15000 });
    await page.keyboard.press('Enter');
    const steps = page.locator('.gettingStartedContainer .getting-started-step');
    await steps.first().waitFor({ timeout: 20000 });
    await sleep(1000);
    const seen = await steps.evaluateAll((els) =>
      els.map((e) => ({
        id: e.getAttribute('data-step-id'),
        title: (e.querySelector('.step-title') || e).textContent.trim(),
        // VS Code marks a completed step's button aria-checked and its check icon `.complete`.
        done: e.getAttribute('aria-checked') === 'true' || !!e.querySelector('.codicon.complete'),
      })),
    );
    const record = { steps: seen, screenshot: await shot(`walkthrough-${name}`) };
    log(`walkthrough (${name}): ${seen.map((x) => `${x.title}${x.done ? ' ✓' : ''}`).join(' | ')}`);
    await runCommand('View: Close All Editors');
    return record;
  }

  /** F1 > Cursor Bridge: Check Setup; the report's text as the webview shows it. */
  async function checkSetup() {
    log('person: F1 > Cursor Bridge: Check Setup');
    await runCommand('Cursor Bridge: Check Setup');
    const text = await until('the Check Setup report', async () => {
      for (const frame of page.frames()) {
        const t = await frame.locator('#report').first().innerText({ timeout: 500 }).catch(() => '');
        if (t && t.includes('VS Code')) return t;
      }
      return '';
    }, 60000);
    await sleep(500);
    const record = { text, screenshot: await shot('check-setup') };
    log(`check setup: ${text.split('\n').length} lines`);
    await runCommand('View: Close All Editors');
    return record;
  }

  /** Every entry the model picker offers (Other Models opened), by aria-label. */
  async function pickerLabels() {
    await escape();
    await input().locator('a.model-picker-name').first().click();
    const options = page.locator('.action-widget [role=option]');
    await options.first().waitFor({ timeout: 10000 });
    const other = page.locator('[role=option][aria-label="Other Models"]').first();
    if (await other.count()) {
      await other.click();
      await sleep(500);
    }
    const labels = await options.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
    const screenshot = await shot('model-picker-all');
    await escape(2);
    return { labels, screenshot };
  }

  /** The model's menu in the picker (configurationSchema, group "navigation") > `label`. */
  async function pickVariant(label) {
    await escape();
    const button = input().locator('a.model-picker-config').first();
    await button.waitFor({ state: 'visible', timeout: 10000 });
    const before = await button.getAttribute('aria-label');
    log(`person: model menu "${before}" > ${label}`);
    await button.click();
    const item = page.locator('.action-widget [role=menuitemradio]', { hasText: label }).first();
    await item.waitFor({ timeout: 10000 });
    const menu = await page.locator('.action-widget [role=menuitemradio]').evaluateAll((els) => els.map((e) => e.textContent.trim()));
    const screenshot = await shot(`variant-menu-${label}`);
    await item.click();
    await sleep(300);
    const after = await button.getAttribute('aria-label');
    return { before, after, menu, screenshot };
  }

  /** The Chat view fills the window (wider answers in the screenshots); best effort. */
  async function maximizeChat() {
    const button = page.locator('.part.auxiliarybar a[aria-label^="Maximize"]').first();
    if (!(await button.count())) return log('no Maximize button on the Chat view; it stays in the side bar');
    log('person: maximizes the Chat view');
    await button.click().catch((e) => log('could not maximize the Chat view:', e.message));
    await until('the maximized Chat view', () => page.locator('.part.auxiliarybar a[aria-label^="Restore"]').count(), 5000).catch(() =>
      log('the Chat view did not report being maximized'),
    );
  }

  async function newChat() {
    await escape();
    log('person: + (New Chat)');
    await chat().locator('a[aria-label^="New Chat"]').first().click();
    // The new chat is empty: wait until the old rows are gone.
    await until('an empty new chat', async () => (await chat().locator('.interactive-item-container.interactive-request').count()) === 0);
  }

  /**
   * What the Chat view shows for the request tagged `tag`: its response row is the row after the
   * request's. Rows are virtualised and reused, so they are found by their data-index, never by
   * DOM order or by counting.
   */
  function state(tag) {
    return page.evaluate((tag) => {
      const root = document.querySelector('.part.auxiliarybar') || document;
      // While a request runs, the input's Send button turns into Cancel.
      const cancellable = !!root.querySelector('.interactive-input-part [aria-label^="Cancel"]');
      const rowOf = (e) => e.closest('.monaco-list-row');
      const index = (e) => Number(rowOf(e)?.dataset.index ?? -1);
      const requests = [...root.querySelectorAll('.interactive-item-container.interactive-request')].filter((e) => e.innerText.includes(tag));
      const request = requests.sort((a, b) => index(a) - index(b)).pop();
      if (!request) return { found: false, cancellable };
      const response = [...root.querySelectorAll('.interactive-item-container.interactive-response')].find((e) => index(e) === index(request) + 1);
      if (!response) return { found: true, responded: false, requestIndex: index(request), cancellable };
      // Error boxes: any element whose class names an error, outermost only, with text.
      const errorEls = [...response.querySelectorAll('[class*="error" i]')].filter((e) => e.innerText.trim());
      const outermost = errorEls.filter((e) => !errorEls.some((o) => o !== e && o.contains(e)));
      return {
        found: true,
        responded: true,
        cancellable,
        requestIndex: index(request),
        loading: response.classList.contains('chat-response-loading'),
        text: response.innerText,
        thinkingBoxes: response.querySelectorAll('.chat-thinking-box').length,
        errors: outermost.map((e) => e.innerText.trim()),
        errorClasses: outermost.map((e) => e.className),
      };
    }, tag);
  }

  /**
   * Opens the response's "Completed N steps" summary, then its thinking block, as a person clicks
   * them; true once `thinking` is visible.
   */
  async function expandThinking(st, tag, thinking) {
    const response = chat().locator(`.monaco-list-row[data-index="${st.requestIndex + 1}"] .interactive-item-container.interactive-response`);
    const shown = async () => ((await state(tag)).text ?? '').includes(thinking);
    const summary = response.locator('summary.completed-response-summary');
    if (await summary.count()) {
      await summary.first().click();
      await until('the summary to open', () => response.locator('.chat-thinking-box .chat-used-context-label a.monaco-button').count(), 3000).catch(() => undefined);
    }
    if (await shown()) return true;
    const box = response.locator('.chat-thinking-box .chat-used-context-label a.monaco-button');
    if (await box.count()) await box.first().click();
    return until('the thinking text', shown, 5000).catch(() => false);
  }

  async function send(mode, item) {
    const directive = `[[double:${JSON.stringify(item.scenario ?? { thinking: item.thinking, answer: item.answer })}]]`;
    const tag = `e2e-chat ${item.id}`;
    const record = { id: item.id, tag, mode, expectedAnswer: item.answer ?? null, expectedThinking: item.thinking ?? null, expectError: !!item.expectError };
    result.sends.push(record);
    record.modeShown = await modeLabel();
    record.modelShown = await modelLabel();
    await escape();
    const typeAndSend = async () => {
      log(`person: [${record.modeShown} / ${record.modelShown}] types "${tag}: ${item.words}" + Enter`);
      await input().locator('.interactive-input-editor').first().click();
      await page.keyboard.press('Control+A');
      await page.keyboard.press('Backspace');
      await page.keyboard.type(`${tag}: ${item.words} `, { delay: 15 });
      // The directive is inserted like a paste: typed key by key, the editor would auto-close its
      // brackets and quotes.
      await page.keyboard.insertText(directive);
      await page.keyboard.press('Enter');
    };
    await typeAndSend();
    const sent = Date.now();
    let st;
    let idleSince = 0;
    record.signInDialogs = 0;
    for (;;) {
      await sleep(300);
      // Signed out, VS Code sometimes answers Enter with "Sign in to use GitHub Copilot" instead of
      // calling the provider (issue 25 item 5a; docs/vscode-provider.md §13.4). A person closes
      // it and sends again; recorded, so the checks say it happened and that the resend answered.
      const dialog = page.locator('.monaco-dialog-box').filter({ hasText: /Sign in to use (GitHub )?Copilot/ }).first();
      if (record.signInDialogs < 2 && (await dialog.isVisible().catch(() => false))) {
        record.signInDialogs++;
        log(`${item.id}: the "Sign in to use GitHub Copilot" dialog opened instead of an answer; the person closes it and sends again`);
        record.signInScreenshot = await shot(`${item.id}-sign-in-dialog`);
        await page.keyboard.press('Escape');
        await dialog.waitFor({ state: 'hidden', timeout: 5000 }).catch(() => undefined);
        await sleep(1000);
        await typeAndSend();
        continue;
      }
      st = await state(tag);
      // Done: the answer is shown and the request is over (the input offers Send, not Cancel),
      // so the provider call has returned (and the sidecar has saved the session) before the
      // person types again.
      const over = st.responded && !st.loading && !st.cancellable;
      if (over && (item.expectError ? st.errors.length > 0 : st.text.includes(item.answer))) break;
      // Over without the answer (an error): give it a moment in case rendering lags.
      if (over) {
        idleSince ||= Date.now();
        if (Date.now() - idleSince > 8000) break;
      } else idleSince = 0;
      if (Date.now() - sent > STEP_TIMEOUT) {
        log(`${item.id}: no finished answer after ${STEP_TIMEOUT / 1000} s (${JSON.stringify({ ...st, text: undefined })})`);
        break;
      }
    }
    record.replyMs = Date.now() - sent;
    record.responded = !!st.responded;
    record.loading = st.loading ?? null;
    record.requestOver = st.responded === true && !st.cancellable;
    record.responseText = st.text ?? '';
    record.answerVisible = item.answer !== undefined && record.responseText.includes(item.answer);
    record.thinkingBoxes = st.thinkingBoxes ?? 0;
    record.thinkingVisibleCollapsed = item.thinking !== undefined && record.responseText.includes(item.thinking);
    record.errors = st.errors ?? [];
    record.errorClasses = st.errorClasses ?? [];
    record.screenshot = await shot(item.id);
    if (st.responded && item.thinking !== undefined) {
      record.thinkingVisibleExpanded = await expandThinking(st, tag, item.thinking);
      record.expandedScreenshot = await shot(`${item.id}-thinking-expanded`);
    }
    record.chatTitle = await chatTitle();

    if (item.expectError) log(`  -> ${record.errors.length} error box(es): ${JSON.stringify(record.errors)}, ${record.replyMs} ms`);
    else {
      log(`  -> ${record.answerVisible ? 'answer shown' : 'ANSWER MISSING'}, thinking block ${record.thinkingBoxes ? 'present' : 'MISSING'}` +
        `${record.thinkingVisibleExpanded ? ' (text visible when expanded)' : ''}, ${record.errors.length} error(s), ${record.replyMs} ms, title "${record.chatTitle}"`);
    }
    writeResult();
  }

  // ---------------------------------------------------------------------------- the session
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  log('workbench page loaded');
  await input().waitFor({ state: 'visible', timeout: 90000 });
  log('Chat view visible; waiting for the API half (consumer extension) to finish');
  const apiDeadline = Date.now() + API_TIMEOUT;
  while (!apiDone() && Date.now() < apiDeadline) await sleep(500);
  result.apiFinished = apiDone();
  log(`API half ${result.apiFinished ? 'finished' : 'DID NOT FINISH'}`);
  result.actions.push({ action: 'workbench', screenshot: await shot('workbench-after-api-half') });
  // The API half leaves notifications behind (the missing CLI warning, the refresh result).
  await runCommand('Notifications: Clear All Notifications');
  const attempt = async (what, fn) => {
    try {
      return await fn();
    } catch (e) {
      log(`${what} failed: ${e.stack || e}`);
      result.failures.push({ mode: what, error: String((e && e.message) || e), screenshot: await shot(`${what}-FAILED`) });
      await escape(2);
      return undefined;
    }
  };
  // E2E_TOOLS_ONLY=1 is for working on the Copilot tools phase alone: the other checks then fail.
  const toolsOnly = process.env.E2E_TOOLS_ONLY === '1';
  result.toolsOnly = toolsOnly;
  if (toolsOnly) {
    log('E2E_TOOLS_ONLY=1: only the Copilot tools phase');
    result.failures.push({ error: 'only the Copilot tools phase ran (E2E_TOOLS_ONLY=1)' });
  } else {
    result.walkthroughBefore = await attempt('walkthrough-before', () => walkthrough('before'));
    result.checkSetup = await attempt('check-setup', () => checkSetup());
  }

  // E2E_CHAT_VIEW=0 is for working on the API half alone: the Chat view checks then fail.
  if (process.env.E2E_CHAT_VIEW === '0') {
    log('E2E_CHAT_VIEW=0: NOT driving the Chat view');
    result.failures.push({ error: 'the Chat view was not driven (E2E_CHAT_VIEW=0)' });
  } else {
    await manageModels();
    await maximizeChat();
    await ensureModel();
  }
  if (process.env.E2E_CHAT_VIEW !== '0' && !toolsOnly) {
    let first = true;
    for (const mode of Object.keys(SCRIPT)) {
      try {
        if (!first) await newChat();
        first = false;
        await setMode(mode);
        await ensureModel();
        for (const item of SCRIPT[mode]) {
          if (item.newChat) {
            await newChat();
            // The mode and the model normally survive a new chat; a person would fix them if not.
            await setMode(mode);
            await ensureModel();
          }
          await send(mode, item);
        }
      } catch (e) {
        log(`${mode} mode failed: ${e.stack || e}`);
        result.failures.push({ mode, error: String((e && e.message) || e), screenshot: await shot(`${mode}-FAILED`) });
      }
    }
    // One entry per base model; the effort menu picks the SKU.
    await attempt('variants', async () => {
      await newChat();
      await setMode('Ask');
      result.picker = await pickerLabels();
      await ensureModel(VARIANT_MODEL);
      result.variantMenu = {};
      await send('Ask', { id: 'variant-default', words: 'with the default effort', answer: 'Default effort ✓', thinking: 'Thinking at the default effort' });
      result.variantMenu.high = await pickVariant('High');
      await send('Ask', { id: 'variant-high', words: 'with high effort', answer: 'High effort ✓', thinking: 'Thinking hard' });
      result.variantMenu.default = await pickVariant('Standard');
      await send('Ask', { id: 'variant-back', words: 'back to the default effort', answer: 'Default again ✓', thinking: 'Back to normal' });
    });
    result.walkthroughAfter = await attempt('walkthrough-after', () => walkthrough('after'));
  }
  // Last, as it changes the settings the phases above rely on (`cursorBridge.tools`, `.backend`).
  if (process.env.E2E_CHAT_VIEW !== '0') {
    const workspace = new URL(url).searchParams.get('folder');
    const ui = { page, chat, input, log, runCommand, maximizeChat, shot, sleep, until, escape, newChat, setMode, ensureModel, state, modeLabel, modelLabel, result, writeResult, resultsDir, STEP_TIMEOUT };
    await attempt('tools', () => require('./tools.cjs').run(ui, workspace));
  }
  result.done = true;
  writeResult();
  fs.writeFileSync(path.join(resultsDir, 'browser-console.log'), consoleLines.join('\n'));
  fs.writeFileSync(path.join(resultsDir, 'browser-external-requests.log'), [...external].join('\n'));
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
  log(`done: ${result.sends.length} messages sent, ${result.failures.length} failure(s)`);
  return result.failures.length === 0;
}

main()
  .then((ok) => {
    fs.writeFileSync(path.join(resultsDir, 'driver.log'), logLines.join('\n'));
    process.exit(ok ? 0 : 1);
  })
  .catch((e) => {
    log(`driver error: ${e.stack || e}`);
    result.failures.push({ error: String((e && e.message) || e) });
    try {
      writeResult();
    } catch {}
    fs.writeFileSync(path.join(resultsDir, 'driver.log'), logLines.join('\n'));
    process.exit(2);
  });
