import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { turnWorkspace } from '../src/folders';

describe('turnWorkspace (chat/send.workspace in a multi-root workspace)', () => {
  const folders = ['/home/dev/api', '/home/dev/web', '/home/dev/web/packages/ui'];

  it('picks the folder holding the active editor’s file', () => {
    assert.equal(turnWorkspace(folders, '/home/dev/web/src/index.ts'), '/home/dev/web');
    assert.equal(turnWorkspace(folders, '/home/dev/api/main.rs'), '/home/dev/api');
  });
  it('picks the innermost folder when folders nest', () => {
    assert.equal(turnWorkspace(folders, '/home/dev/web/packages/ui/button.tsx'), '/home/dev/web/packages/ui');
    assert.equal(
      turnWorkspace([...folders].reverse(), '/home/dev/web/packages/ui/button.tsx'),
      '/home/dev/web/packages/ui',
    );
  });
  it('falls back to the first folder without an active file, or for a file outside every folder', () => {
    assert.equal(turnWorkspace(folders, undefined), '/home/dev/api');
    assert.equal(turnWorkspace(folders, '/etc/hosts'), '/home/dev/api');
  });
  it('is not fooled by a sibling folder sharing a prefix, or a name starting with ..', () => {
    assert.equal(turnWorkspace(['/home/dev/api', '/home/dev/web'], '/home/dev/web-old/x.ts'), '/home/dev/api');
    assert.equal(turnWorkspace(['/home/dev/api', '/home/dev/web'], '/home/dev/web/..hidden/x.ts'), '/home/dev/web');
    assert.equal(turnWorkspace(['/home/dev/api', '/home/dev/web'], '/home/dev/web/../api/x.ts'), '/home/dev/api');
  });
  it('accepts a trailing separator on a folder and returns the folder as given', () => {
    assert.equal(turnWorkspace(['/a', '/home/dev/web/'], '/home/dev/web/x.ts'), '/home/dev/web/');
  });
  it('compares Windows paths without regard to case or drive-letter spelling', () => {
    const win = ['C:\\src\\api', 'C:\\src\\Web'];
    assert.equal(turnWorkspace(win, 'c:\\SRC\\web\\app.ts', 'win32'), 'C:\\src\\Web');
    assert.equal(turnWorkspace(win, 'D:\\src\\web\\app.ts', 'win32'), 'C:\\src\\api');
  });
  it('gives undefined without folders (the sidecar uses a scratch folder)', () => {
    assert.equal(turnWorkspace([], '/home/dev/x.ts'), undefined);
  });
});
