import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { limitIsGuess, ModelCatalog, toChatInformation } from '../src/models';
import type { ModelInfo } from '../src/protocol';

const model = (over: Partial<ModelInfo> = {}): ModelInfo => ({
  id: 'sonnet-5-thinking',
  name: 'Sonnet 5 Thinking',
  family: 'claude-sonnet',
  maxInputTokens: 300_000,
  maxOutputTokens: 32_768,
  capabilities: { thinking: true, toolCalling: true, imageInput: false },
  isDefault: false,
  ...over,
});

const tick = () => new Promise((r) => setImmediate(r));

describe('toChatInformation', () => {
  it('maps a model with its real limits', () => {
    const info = toChatInformation(model());
    assert.equal(info.id, 'sonnet-5-thinking');
    assert.equal(info.name, 'Sonnet 5 Thinking');
    assert.equal(info.family, 'claude-sonnet');
    assert.equal(info.version, 'sonnet-5-thinking');
    assert.equal(info.maxInputTokens, 300_000);
    assert.equal(info.maxOutputTokens, 32_768);
    assert.deepEqual(info.capabilities, { toolCalling: true, imageInput: false });
    assert.equal(info.detail, 'Cursor · thinking');
    assert.match(info.tooltip ?? '', /300K tokens in/);
    assert.doesNotMatch(info.tooltip ?? '', /guess/);
  });
  it('says when the limit is a guess', () => {
    assert.ok(limitIsGuess(model({ family: 'mystery', maxInputTokens: 128_000 })));
    assert.match(toChatInformation(model({ family: 'mystery', maxInputTokens: 128_000 })).tooltip ?? '', /conservative guess/);
    assert.match(toChatInformation(model({ id: 'auto', family: 'auto', maxInputTokens: 200_000 })).tooltip ?? '', /picks the model per request.*guess/);
    assert.ok(!limitIsGuess(model()));
  });
});

function memoryStore(initial: Record<string, unknown> = {}) {
  const data = { ...initial };
  return { data, get: <T>(k: string) => data[k] as T | undefined, update: (k: string, v: unknown) => ((data[k] = v), Promise.resolve()) };
}

describe('ModelCatalog', () => {
  it('answers peek() at once with nothing, loads in the background, then fires the change event', async () => {
    let fetches = 0;
    let changes = 0;
    const catalog = new ModelCatalog(
      () => (fetches++, Promise.resolve([model()])),
      () => changes++,
    );
    assert.deepEqual(catalog.peek(), []);
    assert.deepEqual(catalog.peek(), [], 'a second silent call does not start a second load');
    await tick();
    assert.equal(fetches, 1);
    assert.equal(changes, 1);
    assert.equal(catalog.peek().length, 1);
    await tick();
    assert.equal(fetches, 1, 'loaded once: no more background loads');
  });

  it('takes a list the sidecar pushed (models/changed) without asking again', async () => {
    let fetches = 0;
    let changes = 0;
    const catalog = new ModelCatalog(async () => {
      fetches++;
      return [model()];
    }, () => changes++);
    catalog.replace([model({ id: 'brand-new-9', name: 'Brand New 9' })]);
    assert.equal(changes, 1);
    assert.deepEqual(catalog.peek().map((m) => m.id), ['brand-new-9']);
    await tick();
    assert.equal(fetches, 0, 'a pushed list counts as loaded');
  });
  it('fires the change event only when the list really changed', async () => {
    let changes = 0;
    let list = [model()];
    const catalog = new ModelCatalog(() => Promise.resolve(list), () => changes++);
    await catalog.load(false);
    await catalog.load(true);
    assert.equal(changes, 1);
    list = [model(), model({ id: 'gpt-5.6-sol', family: 'gpt' })];
    await catalog.load(true);
    assert.equal(changes, 2);
  });

  it('starts from the stored list and stores new ones', async () => {
    const store = memoryStore({ 'cursorBridge.models.v1': [model({ id: 'stored' })] });
    const catalog = new ModelCatalog(() => Promise.resolve([model({ id: 'fresh' })]), () => undefined, { store });
    assert.equal(catalog.peek()[0].id, 'stored', 'available before the sidecar answers');
    await tick();
    assert.equal(catalog.peek()[0].id, 'fresh');
    assert.equal((store.data['cursorBridge.models.v1'] as ModelInfo[])[0].id, 'fresh');
  });

  it('does not retry a failed background load on every silent call', async () => {
    let fetches = 0;
    let now = 1_000_000;
    const catalog = new ModelCatalog(
      () => (fetches++, Promise.reject(new Error('not logged in'))),
      () => undefined,
      { retryAfterMs: 30_000, now: () => now },
    );
    catalog.peek();
    await tick();
    catalog.peek();
    catalog.peek();
    await tick();
    assert.equal(fetches, 1);
    now += 31_000;
    catalog.peek();
    await tick();
    assert.equal(fetches, 2);
  });

  it('shares one request between concurrent loads, and reloads after invalidate()', async () => {
    let fetches = 0;
    const catalog = new ModelCatalog(() => (fetches++, Promise.resolve([model()])), () => undefined);
    await Promise.all([catalog.load(false), catalog.load(false)]);
    assert.equal(fetches, 1);
    catalog.invalidate();
    catalog.peek();
    await tick();
    assert.equal(fetches, 2);
  });

  it('rejects load() for callers that wait (the non-silent path)', async () => {
    const catalog = new ModelCatalog(() => Promise.reject(new Error('no CLI')), () => undefined);
    await assert.rejects(catalog.load(false), /no CLI/);
  });
});
