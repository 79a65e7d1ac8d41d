// Our session id travels through the Chat view's history as a `stateful_marker` data part: the one
// data part Copilot Chat keeps in later turns and across a window reload. Its text is
// "<modelId>\<marker>", and Copilot rewrites the "<modelId>" prefix to whatever model is selected
// now (docs/vscode-provider.md §7), so our identity lives entirely after the LAST backslash
// and names itself, so markers of other providers are never mistaken for ours.

export const MARKER_MIME = 'stateful_marker';
const MARKER_PREFIX = 'cursor-bridge:v1:';
// Session ids are the sidecar's ("cb-<hex>"); be liberal but refuse anything that could not be one.
const SESSION_ID = /^[A-Za-z0-9._:-]{1,200}$/;

/** The marker text for `sessionId`, as reported with a response of `modelId`. */
export function markerText(modelId: string, sessionId: string): string {
  return `${modelId}\\${MARKER_PREFIX}${sessionId}`;
}

export function encodeMarker(modelId: string, sessionId: string): Uint8Array {
  return new TextEncoder().encode(markerText(modelId, sessionId));
}

/** The session id inside a marker of ours, or undefined for anything else. */
export function parseMarker(data: Uint8Array | string): string | undefined {
  const text = typeof data === 'string' ? data : new TextDecoder().decode(data);
  const ours = text.slice(text.lastIndexOf('\\') + 1);
  if (!ours.startsWith(MARKER_PREFIX)) return undefined;
  const sessionId = ours.slice(MARKER_PREFIX.length);
  return SESSION_ID.test(sessionId) ? sessionId : undefined;
}
