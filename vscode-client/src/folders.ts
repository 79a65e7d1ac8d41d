// Which workspace folder a turn runs in. `initialize.workspaceFolders` carries every folder of a
// multi-root workspace; each `chat/send` names the one the person is working in, which is the
// folder of the file in the active editor (the Chat view keeps the last editor active while it has
// focus). No vscode import: the extension passes in the paths.

import * as path from 'node:path';

/**
 * The folder that contains `activeFile` (the innermost one when folders nest), else the first
 * folder; undefined when there are no folders (the sidecar then uses a scratch folder). The result
 * is always an entry of `folders`, spelled as there.
 */
export function turnWorkspace(
  folders: readonly string[],
  activeFile: string | undefined,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const p = platform === 'win32' ? path.win32 : path.posix;
  let best: string | undefined;
  if (activeFile) {
    for (const folder of folders) {
      // win32's relative() compares case-insensitively, as Windows paths are.
      const rel = p.relative(folder, activeFile);
      const inside = rel !== '' && rel !== '..' && !rel.startsWith(`..${p.sep}`) && !p.isAbsolute(rel);
      if (inside && (best === undefined || p.resolve(folder).length > p.resolve(best).length)) best = folder;
    }
  }
  return best ?? folders[0];
}
