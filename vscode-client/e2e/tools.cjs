// The Copilot tools phase of driver.cjs: in Agent mode a Cursor model (the double's scripted
// tool-calling model, cli-double/README.md §9) calls Copilot's own tools, and the person sees
// Copilot's UI for them: the edit pills and the Keep/Undo review of a file it creates and edits,
// and the confirmation of a terminal command, which the person gives only after a while (longer
// than the sidecar's 45 s "result pending" detach, so that path runs too).
//
// Runs once per backend in E2E_TOOLS_BACKENDS (session.rs sets the session's; default "print,acp"
// when run by hand) with `cursorBridge.tools:
// "copilot"`, set in the user's settings.json as a person editing it would. What it saw goes to
// `result.tools[backend]`; check.cjs judges, also against the double's record.
//
// Env: E2E_TERMINAL_WAIT_S (how long the person takes to click Allow, default 70).

const fs = require('fs');
const path = require('path');

const TERMINAL_WAIT = Number(process.env.E2E_TERMINAL_WAIT_S || 70) * 1000;
/** The double's answer after its script's last step (cli-double/README.md §9.1). */
const FINAL = 'Done. Results:';
const ORIGINAL = ['first line of the e2e file', 'the placeholder line', 'last line of the e2e file', ''].join('\n');
const REPLACED = 'replaced through Copilot';

function backends() {
  const list = (process.env.E2E_TOOLS_BACKENDS || 'print,acp').split(',').map((b) => b.trim()).filter(Boolean);
  const bad = list.filter((b) => !['print', 'acp'].includes(b));
  if (bad.length) throw new Error(`E2E_TOOLS_BACKENDS: unknown backend(s) ${bad.join(', ')} (print, acp)`);
  return list;
}

/** What each step of the phase does, for one backend; the file names say which backend. */
function plan(workspace, backend) {
  const file = path.join(workspace, `e2e-tools-${backend}.txt`);
  const proof = path.join(workspace, `e2e-terminal-${backend}.txt`);
  const marker = `e2e-terminal-ok-${backend}`;
  return {
    edit: {
      id: `tools-edit-${backend}`,
      words: 'create a file, then edit it',
      file,
      original: ORIGINAL,
      expected: ORIGINAL.replace('the placeholder line', REPLACED),
      script: [
        { say: 'Creating the file.', call: [{ name: 'create_file', arguments: { filePath: file, content: ORIGINAL } }] },
        { say: 'Now editing it.', call: [{ name: 'replace_string_in_file', arguments: { filePath: file, oldString: 'the placeholder line', newString: REPLACED } }] },
      ],
    },
    terminal: {
      id: `tools-terminal-${backend}`,
      words: 'run a command in the terminal',
      proof,
      marker,
      command: `echo ${marker} | tee ${proof}`,
      script: [
        {
          say: 'Running a command.',
          call: [{ name: 'run_in_terminal', arguments: { command: `echo ${marker} | tee ${proof}`, explanation: 'Writes a marker file for the e2e test.', goal: 'Leave a marker file', mode: 'sync' } }],
        },
      ],
    },
  };
}

/**
 * Sets `cursorBridge.*` keys as a person does: Preferences: Open User Settings (JSON), the edited
 * text in place of the old, Ctrl+S. (VS Code does not notice the file changing under it here, so
 * writing it directly would not do.)
 */
async function setSettings(ui, file, values) {
  const { page, log } = ui;
  const settings = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const [k, v] of Object.entries(values)) settings[`cursorBridge.${k}`] = v;
  log(`person: F1 > Preferences: Open User Settings (JSON); sets ${Object.entries(values).map(([k, v]) => `cursorBridge.${k} "${v}"`).join(', ')}; Ctrl+S`);
  await ui.runCommand('Preferences: Open User Settings (JSON)');
  // With the Chat view maximized the editor opens over it, without a tab: found by its text.
  const editor = page.locator('.monaco-editor').filter({ has: page.locator('.view-lines', { hasText: 'cursorBridge.utilityModel' }) }).first();
  await editor.waitFor({ state: 'visible', timeout: 15000 });
  await editor.locator('.view-lines').first().click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  // Like a paste, and on one line: typed key by key, the editor would auto-close brackets and
  // quotes, and it indents every new line it is given.
  await page.keyboard.insertText(JSON.stringify(settings));
  await page.keyboard.press('Control+S');
  await ui.until('settings.json to be saved', () => {
    try {
      const now = JSON.parse(fs.readFileSync(file, 'utf8'));
      return Object.entries(values).every(([k, v]) => now[`cursorBridge.${k}`] === v);
    } catch {
      return false;
    }
  }, 10000);
  await ui.runCommand('View: Close All Editors');
  await editor.waitFor({ state: 'hidden', timeout: 10000 });
}

/**
 * Buttons and edit pills as the Chat view shows them: every clickable element's text, and the
 * file widgets of the response (Copilot's "Created/Edited <file>" parts).
 */
function looks(page, requestIndex) {
  return page.evaluate((requestIndex) => {
    const root = document.querySelector('.part.auxiliarybar') || document;
    const visible = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
    const buttons = [...root.querySelectorAll('a.monaco-button, button, .monaco-button, [role=button]')]
      .filter(visible)
      .map((e) => (e.innerText || e.getAttribute('aria-label') || '').trim())
      .filter(Boolean);
    const response = [...root.querySelectorAll('.interactive-item-container.interactive-response')].find(
      (e) => Number(e.closest('.monaco-list-row')?.dataset.index ?? -1) === requestIndex + 1,
    );
    // Copilot's tool parts ("Created <file>", "Edited <file> +1 -1", the terminal command), as
    // shown: innerText is empty while the "Completed N steps" summary is closed.
    const pills = response
      ? [...response.querySelectorAll('.chat-tool-invocation-part, .chat-codeblock-pill-container')]
          .map((e) => e.innerText.trim().replace(/\s+/g, ' '))
          .filter(Boolean)
      : [];
    const editing = [...root.querySelectorAll('[class*="chat-editing"]')].filter(visible).map((e) => e.innerText.trim().replace(/\s+/g, ' ')).filter(Boolean);
    return { buttons: [...new Set(buttons)], pills, editing: editing.slice(0, 5), html: response ? response.outerHTML : '' };
  }, requestIndex);
}

async function run(ui, workspace) {
  const { page, log, shot, sleep, until, result } = ui;
  const settingsFile = process.env.E2E_USER_SETTINGS;
  if (!settingsFile) throw new Error('E2E_USER_SETTINGS is not set (session.rs sets it)');
  result.tools = {};
  result.toolsBackends = backends();
  for (const backend of result.toolsBackends) {
    const seen = { backend, started: Date.now() };
    result.tools[backend] = seen;
    try {
      await setSettings(ui, settingsFile, { tools: 'copilot', backend });
      await until('the extension host to see the new settings', () => {
        const seenNow = readJson(path.join(ui.resultsDir, 'bridge-settings.json'));
        return seenNow && seenNow.tools === 'copilot' && seenNow.backend === backend;
      }, 30000);
      // A backend change restarts the sidecar (once nothing is in flight): a turn now waits for it.
      const p = plan(workspace, backend);
      await freshChat();
      seen.edit = await editStep(p.edit);
      await freshChat();
      seen.terminal = await terminalStep(p.terminal);
    } catch (e) {
      log(`tools (${backend}) failed: ${e.stack || e}`);
      result.failures.push({ mode: `tools-${backend}`, error: String((e && e.message) || e), screenshot: await shot(`tools-${backend}-FAILED`) });
    }
    seen.ms = Date.now() - seen.started;
    ui.writeResult();
  }

  async function type(item) {
    const tag = `e2e-chat ${item.id}`;
    await ui.escape();
    log(`person: [${await ui.modeLabel()} / ${await ui.modelLabel()}] types "${tag}: ${item.words}" + Enter`);
    await ui.input().locator('.interactive-input-editor').first().click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.type(`${tag}: ${item.words} `, { delay: 15 });
    await page.keyboard.insertText(`[[double:${JSON.stringify({ toolScript: item.script })}]]`);
    await page.keyboard.press('Enter');
    return tag;
  }

  /** Waits for the final answer; `during(st)` runs on every poll (it may click things). */
  async function finish(tag, limit, during) {
    const sent = Date.now();
    let st;
    for (;;) {
      await sleep(300);
      st = await ui.state(tag);
      if (during) await during(st);
      const over = st.responded && !st.loading && !st.cancellable;
      if (over && (st.text || '').includes(FINAL)) break;
      if (Date.now() - sent > limit) {
        log(`${tag}: no final answer after ${limit / 1000} s (${JSON.stringify({ ...st, text: (st.text || '').slice(-300) })})`);
        break;
      }
    }
    return { st, ms: Date.now() - sent };
  }

  /**
   * A new chat in Agent mode with Composer 2.5, in the maximized Chat view. An editor opening (the
   * walkthrough before this phase, Copilot showing a file it edited) restores the view to the side
   * bar, where the model picker is too narrow to show the model's name.
   */
  async function freshChat() {
    await ui.runCommand('View: Close All Editors');
    await ui.maximizeChat();
    await ui.newChat();
    await ui.setMode('Agent');
    await ui.ensureModel();
  }

  /** Opens the response's "Completed N steps" summary (unless open), as a person clicks it. */
  async function openSummary(requestIndex) {
    await ui.maximizeChat();
    const summary = ui.chat().locator(`.monaco-list-row[data-index="${requestIndex + 1}"] summary.completed-response-summary`).first();
    if ((await summary.count()) && !(await summary.evaluate((e) => !!e.closest('details')?.open))) {
      await summary.click();
      await sleep(700);
    }
    // Copilot may fold a later tool call into a closed group ("Finished with 1 step"), whose parts
    // are not rendered until opened: the person opens each to see every pill.
    const closed = ui.chat().locator(`.monaco-list-row[data-index="${requestIndex + 1}"] .chat-thinking-box .chat-used-context-label a[aria-expanded="false"]`).filter({ visible: true });
    for (let i = 0; i < 5 && (await closed.count()); i++) {
      const group = closed.first();
      log(`person: opens "${(await group.getAttribute('aria-label')) || 'a closed group'}"`);
      await group.click();
      await sleep(500);
    }
    // An opened group renders its parts after its animation (seen empty 500 ms after the click):
    // the person waits until every open group shows something, up to 5 s.
    const row = ui.chat().locator(`.monaco-list-row[data-index="${requestIndex + 1}"]`);
    await until(
      'the opened groups to render',
      () =>
        row
          .evaluate((r) =>
            [...r.querySelectorAll('.chat-thinking-box')]
              .filter((b) => b.querySelector('a[aria-expanded="true"]'))
              .every((b) => (b.querySelector('.chat-thinking-collapsible')?.innerText || '').trim().length > 0),
          )
          .catch(() => false),
      5000,
    ).catch((e) => log(`  (${e.message})`));
  }

  async function editStep(item) {
    const record = { id: item.id, file: item.file, expected: item.expected, modeShown: await ui.modeLabel(), modelShown: await ui.modelLabel() };
    const tag = await type(item);
    const { st, ms } = await finish(tag, ui.STEP_TIMEOUT);
    record.replyMs = ms;
    record.responseText = st.text || '';
    record.errors = st.errors || [];
    record.requestOver = st.responded === true && !st.cancellable;
    record.finalAnswer = finalLine(record.responseText);
    await openSummary(st.requestIndex);
    const before = await looks(page, st.requestIndex);
    fs.writeFileSync(path.join(ui.resultsDir, `${item.id}-response.html`), before.html);
    record.pills = before.pills;
    // Copilot may fold the second call into a "Finished with N step(s)" group that headless
    // Chromium never renders the parts of, even when opened: noted, so the check can tell.
    record.folded = await ui.chat().locator(`.monaco-list-row[data-index="${st.requestIndex + 1}"] .chat-thinking-box .chat-used-context-label a`).evaluateAll((as) => as.map((a) => a.getAttribute('aria-label') || '').filter((l) => /^Finished with \d+ step/.test(l)));
    record.editingBar = before.editing;
    record.buttonsBeforeKeep = before.buttons;
    record.screenshot = await shot(`${item.id}-review`);
    log(`  -> ${ms} ms; pills ${JSON.stringify(record.pills)}; editing bar ${JSON.stringify(record.editingBar)}; buttons ${JSON.stringify(before.buttons)}`);
    // Keep: the review bar above the input (its Keep button accepts every edit of the session).
    const keep = ui.chat().getByRole('button', { name: /^Keep\b/ }).first();
    if (await keep.count()) {
      log('person: Keep');
      await keep.click();
      record.keepClicked = true;
      await until('the review bar to go', async () => !(await looks(page, st.requestIndex)).buttons.some((b) => /^Keep$/.test(b)), 10000).catch(() =>
        log('the Keep button is still there'),
      );
      record.buttonsAfterKeep = (await looks(page, st.requestIndex)).buttons;
      record.keptScreenshot = await shot(`${item.id}-kept`);
    } else {
      record.keepClicked = false;
      log('no Keep button to click');
    }
    await sleep(500);
    record.fileOnDisk = fs.existsSync(item.file) ? fs.readFileSync(item.file, 'utf8') : null;
    ui.writeResult();
    return record;
  }

  async function terminalStep(item) {
    const record = { id: item.id, proof: item.proof, marker: item.marker, command: item.command, modeShown: await ui.modeLabel(), modelShown: await ui.modelLabel() };
    const tag = await type(item);
    // The confirmation above the input (the response keeps a hidden copy: roles skip hidden ones).
    const allow = ui.chat().getByRole('button', { name: /^Allow\b/ }).first();
    let shownAt = 0;
    const { st, ms } = await finish(tag, ui.STEP_TIMEOUT + TERMINAL_WAIT, async () => {
      if (record.allowClickedAfterMs !== undefined) return;
      if (!shownAt && (await allow.count()) && (await allow.isVisible().catch(() => false))) {
        shownAt = Date.now();
        record.allowShown = true;
        const l = await looks(page, (await ui.state(tag)).requestIndex);
        record.confirmationButtons = l.buttons;
        // The confirmation's own text ("Run bash command?", the command): the Allow button's
        // nearest ancestor that holds the question.
        record.confirmationText = await allow.evaluate((b) => {
          for (let e = b.parentElement; e; e = e.parentElement) if (/\?/.test(e.innerText || '')) return e.innerText;
          return '';
        });
        record.confirmationScreenshot = await shot(`${item.id}-confirmation`);
        log(`  confirmation shown (buttons ${JSON.stringify(l.buttons)}); the person waits ${TERMINAL_WAIT / 1000} s`);
      }
      if (shownAt && Date.now() - shownAt >= TERMINAL_WAIT) {
        log('person: Allow');
        record.waitingScreenshot = await shot(`${item.id}-before-allow`);
        await allow.click();
        record.allowClickedAfterMs = Date.now() - shownAt;
      }
    });
    record.replyMs = ms;
    record.responseText = st.text || '';
    record.errors = st.errors || [];
    record.requestOver = st.responded === true && !st.cancellable;
    record.finalAnswer = finalLine(record.responseText);
    record.allowShown = !!record.allowShown;
    record.proofOnDisk = fs.existsSync(item.proof) ? fs.readFileSync(item.proof, 'utf8') : null;
    await openSummary(st.requestIndex);
    const l = await looks(page, st.requestIndex);
    fs.writeFileSync(path.join(ui.resultsDir, `${item.id}-response.html`), l.html);
    record.pills = l.pills;
    record.screenshot = await shot(`${item.id}-answer`);
    log(`  -> ${ms} ms; Allow ${record.allowShown ? `clicked after ${record.allowClickedAfterMs} ms` : 'NEVER SHOWN'}; proof ${JSON.stringify(record.proofOnDisk)}; answer ${JSON.stringify(record.finalAnswer)}`);
    ui.writeResult();
    return record;
  }
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** The line of the response with the double's final answer ("Done. Results: …"). */
function finalLine(text) {
  return (text.split('\n').find((l) => l.includes(FINAL)) || '').trim();
}

module.exports = { run, backends, FINAL };
