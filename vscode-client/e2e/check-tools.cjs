// The checks of the Copilot tools phase (tools.cjs), called by check.cjs: what the Chat view showed
// (Copilot's edit pills, the Keep/Undo review, the terminal confirmation, the final answers), what
// happened on disk, and, in the double's record, that the calls came through the backend's path
// (print: the prompt protocol; ACP: MCP calls to the sidecar's loopback server) and that none of
// Cursor's built-in tools ran.

const FINAL = 'Done. Results:';
const EDITED = 'The following files were successfully edited:';

/**
 * `c`: { guarded, record, mainRuns, arg, show, chat, terminalWaitMs }. Returns the chats of the
 * phase as the sidecar saves them ("<chat id>" on print, "acp:<session id>" on ACP), for the
 * sessions check.
 */
function checkTools(c) {
  const { guarded, record, mainRuns, arg, show, chat } = c;
  // What the driver ran; if it never got there, the session's backend (check.cjs's E2E_BACKEND).
  const backends = chat.toolsBackends || [process.env.E2E_BACKEND || 'print'];
  const chats = [];
  const seen = (backend) => {
    const t = (chat.tools || {})[backend];
    if (!t) throw new Error(`the tools phase did not run on ${backend}`);
    return t;
  };
  const step = (backend, which) => {
    const s = seen(backend)[which];
    if (!s) throw new Error(`the ${which} step did not run on ${backend}`);
    return s;
  };
  const withTools = record.filter((l) => l.tools);
  /** The double's calls of the phase on `backend`'s step, found by their arguments. */
  const callsOf = (probe) => withTools.flatMap((l) => (l.tools.calls || []).filter((x) => x.path !== 'none' && probe(x.arguments || {})).map((x) => ({ ...x, line: l })));
  const resultsOf = (sessionId) => withTools.flatMap((l) => (l.tools.results || []).filter((r) => r.sessionId === sessionId));
  const printChat = (tag) => {
    const found = mainRuns.filter((l) => (l.prompt || '').includes(tag));
    if (found.length !== 1) throw new Error(`${found.length} main CLI runs carry "${tag}"`);
    const first = found[0];
    return [first, ...mainRuns.filter((l) => arg(l, '--resume') === first.sessionId)];
  };

  for (const backend of backends) {
    const label = `tools ${backend}`;
    guarded(`${label} edit: the Chat view shows Copilot's Created and Edited pills and its Keep/Undo review`, () => {
      const s = step(backend, 'edit');
      const name = s.file.split('/').pop();
      const created = s.pills.some((p) => p.startsWith(`Created ${name}`));
      // Or folded by Copilot into a "Finished with 1 step" group whose parts it does not render.
      const edited = s.pills.some((p) => p.startsWith(`Edited ${name}`) && /\+1 -1/.test(p)) || (s.folded || []).length > 0;
      const review = s.buttonsBeforeKeep.includes('Keep') && s.buttonsBeforeKeep.includes('Undo') && s.editingBar.some((b) => /1 file changed/.test(b));
      const ok = s.modeShown === 'Agent' && s.modelShown === 'Composer 2.5' && created && edited && review && s.errors.length === 0;
      return [ok, `${s.modeShown}/${s.modelShown}; pills ${show(s.pills)}${(s.folded || []).length ? `, folded ${show(s.folded)}` : ''}; review ${show(s.editingBar[0] || 'MISSING')}${s.errors.length ? `; errors ${show(s.errors)}` : ''}; ${s.screenshot}`];
    });
    guarded(`${label} edit: the final answer quotes both tools' results`, () => {
      const s = step(backend, 'edit');
      const want = `${FINAL} create_file: ${EDITED}; replace_string_in_file: ${EDITED}`;
      return [s.requestOver && s.finalAnswer === want, `${s.replyMs} ms; ${show(s.finalAnswer || s.responseText.slice(-300))}`];
    });
    guarded(`${label} edit: Keep accepts the edits, and the file on disk holds the replaced text`, () => {
      const s = step(backend, 'edit');
      const gone = s.keepClicked && !(s.buttonsAfterKeep || []).includes('Keep');
      return [gone && s.fileOnDisk === s.expected, `Keep ${s.keepClicked ? (gone ? 'clicked, review closed' : 'clicked, REVIEW STILL OPEN') : 'NOT FOUND'}; file ${show(s.fileOnDisk)}; ${s.keptScreenshot}`];
    });
    guarded(`${label} terminal: Copilot asks before running the command; the person allows it ${Math.round(c.terminalWaitMs / 1000)} s later`, () => {
      const s = step(backend, 'terminal');
      const ok = s.allowShown && /Run .*command\?/.test(s.confirmationText || '') && (s.confirmationText || '').includes(s.marker) && s.allowClickedAfterMs >= c.terminalWaitMs;
      return [ok, `confirmation ${s.allowShown ? show((s.confirmationText || '').replace(/\s+/g, ' ').slice(-160)) : 'NEVER SHOWN'}; Allow after ${s.allowClickedAfterMs} ms; ${s.confirmationScreenshot}`];
    });
    guarded(`${label} terminal: the command ran, and the final answer quotes its output`, () => {
      const s = step(backend, 'terminal');
      const ok = (s.proofOnDisk || '').trim() === s.marker && s.finalAnswer === `${FINAL} run_in_terminal: ${s.marker}` && s.requestOver && s.errors.length === 0;
      return [ok, `file ${show(s.proofOnDisk)}; answer ${show(s.finalAnswer || s.responseText.slice(-300))}; ${s.screenshot}`];
    });

    const file = () => step(backend, 'edit').file;
    const marker = () => step(backend, 'terminal').marker;
    if (backend === 'print') {
      guarded(`${label}: the model's calls went through the prompt protocol ([TOOL_CALLS] out, TOOL_RESULT prompts back into the same chat)`, () => {
        const edit = printChat(`e2e-chat ${step(backend, 'edit').id}`);
        const term = printChat(`e2e-chat ${step(backend, 'terminal').id}`);
        chats.push(edit[0].sessionId, term[0].sessionId);
        const offered = (l) => (l.tools.offered || []).some((o) => ['create_file', 'replace_string_in_file', 'run_in_terminal'].every((n) => o.names.includes(n)));
        const sent = (runs, name) => runs.some((l) => (l.tools.calls || []).some((x) => x.path === 'prompt' && x.name === name && x.outcome === 'sent'));
        const back = (runs, name, text) => runs.some((l) => (l.prompt || '').startsWith(`TOOL_RESULT (call_id=`) && (l.prompt || '').includes(`name=${name})`) && (l.prompt || '').includes(text));
        const ok =
          edit.length === 3 && term.length === 2 && offered(edit[0]) && offered(term[0]) &&
          sent(edit, 'create_file') && sent(edit, 'replace_string_in_file') && sent(term, 'run_in_terminal') &&
          back(edit, 'create_file', EDITED) && back(edit, 'replace_string_in_file', EDITED) && back(term, 'run_in_terminal', marker());
        return [ok, `edit chat ${edit[0].sessionId}: ${edit.length} runs; terminal chat ${term[0].sessionId}: ${term.length} runs (the first with <client_tools>, the rest --resume with TOOL_RESULT prompts)`];
      });
      guarded(`${label}: no Cursor built-in tool ran (ask mode, no --force, a private empty folder)`, () => {
        const runs = [...printChat(`e2e-chat ${step(backend, 'edit').id}`), ...printChat(`e2e-chat ${step(backend, 'terminal').id}`)];
        const workspace = file().slice(0, file().lastIndexOf('/'));
        const bad = runs.filter((l) => arg(l, '--mode') !== 'ask' || l.argv.includes('--force') || l.argv.includes('-f') || arg(l, '--workspace') === workspace || l.cwd === workspace || (l.tools.builtins || []).length);
        return [bad.length === 0, `${runs.length} runs in ${show(runs.map((l) => l.cwd.split('/').pop()).filter((v, i, a) => a.indexOf(v) === i))}${bad.length ? `; WRONG: ${bad.map((l) => show(l.argv)).join(', ')}` : ''}`];
      });
    } else {
      guarded(`${label}: the model's calls were MCP tools/call to the sidecar's loopback server; the terminal's result came after the 45 s detach`, () => {
        const edits = callsOf((a) => a.filePath === file());
        const terms = callsOf((a) => (a.command || '').includes(marker()));
        const editSession = edits[0] && edits[0].sessionId;
        const termSession = terms[0] && terms[0].sessionId;
        chats.push(`acp:${editSession}`, `acp:${termSession}`);
        const server = (x) => (x.line.tools.mcpServers || []).some((m) => m.connected && m.url.startsWith('http://127.0.0.1:'));
        const editOk = edits.length === 2 && edits.every((x) => x.path === 'mcp' && x.outcome === 'result' && server(x)) && edits.map((x) => x.name).join() === 'create_file,replace_string_in_file';
        const termResults = resultsOf(termSession).filter((r) => r.name === 'run_in_terminal');
        const pendingThenPrompt = termResults.length === 2 && termResults[0].via === 'mcp' && termResults[0].pending && termResults[1].via === 'prompt' && termResults[1].text.includes(marker());
        const termOk = terms.length === 1 && terms[0].path === 'mcp' && terms[0].outcome === 'pending' && server(terms[0]) && pendingThenPrompt;
        return [editOk && termOk, `edit: ${show(edits.map((x) => `${x.name} ${x.path} ${x.outcome}`))}; terminal: ${show(terms.map((x) => `${x.name} ${x.path} ${x.outcome}`))}, results ${show(termResults.map((r) => `${r.via}${r.pending ? ' (pending)' : ''}: ${r.text.slice(0, 40)}`))}`];
      });
      guarded(`${label}: no Cursor built-in tool ran (the agent works in a private empty folder)`, () => {
        const lines = [...new Set([...callsOf((a) => a.filePath === file()), ...callsOf((a) => (a.command || '').includes(marker()))].map((x) => x.line))];
        const workspace = file().slice(0, file().lastIndexOf('/'));
        const bad = lines.filter((l) => l.cwd === workspace || (l.tools.builtins || []).length);
        const asked = lines.flatMap((l) => l.tools.permissions || []);
        const ok = lines.length > 0 && bad.length === 0 && asked.every((p) => p.title.startsWith('cb-') && p.answer === 'allow-once');
        return [ok, `${lines.length} ACP process(es) in ${show(lines.map((l) => l.cwd.split('/').pop()))}; permission requests ${show(asked.map((p) => `${p.title}: ${p.answer}`))}`];
      });
    }
  }
  guarded('tools: the double saw no built-in tool of Cursor in the whole run', () => {
    const ran = withTools.flatMap((l) => l.tools.builtins || []);
    return [ran.length === 0, ran.length ? show(ran) : `${withTools.length} runs with tools`];
  });
  return chats;
}

module.exports = { checkTools };
