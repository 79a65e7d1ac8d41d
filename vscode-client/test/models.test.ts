import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupModels, limitIsGuess, ModelCatalog, resolveSku, toChatInformation } from '../src/models';
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
    assert.match(
      toChatInformation(model({ family: 'mystery', maxInputTokens: 128_000 })).tooltip ?? '',
      /conservative guess/,
    );
    assert.match(
      toChatInformation(model({ id: 'auto', family: 'auto', maxInputTokens: 200_000 })).tooltip ?? '',
      /picks the model per request.*guess/,
    );
    assert.ok(!limitIsGuess(model()));
  });
});

function memoryStore(initial: Record<string, unknown> = {}) {
  const data = { ...initial };
  return {
    data,
    get: <T>(k: string) => data[k] as T | undefined,
    update: (k: string, v: unknown) => ((data[k] = v), Promise.resolve()),
  };
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
    const catalog = new ModelCatalog(
      async () => {
        fetches++;
        return [model()];
      },
      () => changes++,
    );
    catalog.replace([model({ id: 'brand-new-9', name: 'Brand New 9' })]);
    assert.equal(changes, 1);
    assert.deepEqual(
      catalog.peek().map((m) => m.id),
      ['brand-new-9'],
    );
    await tick();
    assert.equal(fetches, 0, 'a pushed list counts as loaded');
  });
  it('fires the change event only when the list really changed', async () => {
    let changes = 0;
    let list = [model()];
    const catalog = new ModelCatalog(
      () => Promise.resolve(list),
      () => changes++,
    );
    await catalog.load(false);
    await catalog.load(true);
    assert.equal(changes, 1);
    list = [model(), model({ id: 'gpt-5.6-sol', family: 'gpt' })];
    await catalog.load(true);
    assert.equal(changes, 2);
  });

  it('starts from the stored list and stores new ones', async () => {
    const store = memoryStore({ 'cursorBridge.models.v1': [model({ id: 'stored' })] });
    const catalog = new ModelCatalog(
      () => Promise.resolve([model({ id: 'fresh' })]),
      () => undefined,
      { store },
    );
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
    const catalog = new ModelCatalog(
      () => (fetches++, Promise.resolve([model()])),
      () => undefined,
    );
    await Promise.all([catalog.load(false), catalog.load(false)]);
    assert.equal(fetches, 1);
    catalog.invalidate();
    catalog.peek();
    await tick();
    assert.equal(fetches, 2);
  });

  it('rejects load() for callers that wait (the non-silent path)', async () => {
    const catalog = new ModelCatalog(
      () => Promise.reject(new Error('no CLI')),
      () => undefined,
    );
    await assert.rejects(catalog.load(false), /no CLI/);
  });
});

describe('groupModels: one picker entry per base model', () => {
  const sku = (
    id: string,
    base: string,
    variant: Partial<NonNullable<ModelInfo['variant']>>,
    over: Partial<ModelInfo> = {},
  ): ModelInfo =>
    model({
      id,
      name: id,
      family: 'gpt',
      base: { id: base, name: base.toUpperCase() },
      variant: { fast: false, thinking: false, label: id, default: false, ...variant },
      ...over,
    });
  const listed: ModelInfo[] = [
    sku('gpt-5.5', 'gpt-5.5', { label: 'Standard', default: true }),
    sku('gpt-5.5-high', 'gpt-5.5', { effort: 'high', label: 'High' }),
    sku('gpt-5.5-low', 'gpt-5.5', { effort: 'low', label: 'Low' }),
    sku(
      'composer-2.5',
      'composer-2.5',
      { label: 'Standard', default: true },
      { family: 'composer', maxInputTokens: 200_000 },
    ),
    sku(
      'composer-2.5-fast',
      'composer-2.5',
      { fast: true, label: 'Fast' },
      { family: 'composer', maxInputTokens: 200_000 },
    ),
    sku('x-high-fast', 'x', { effort: 'high', fast: true, label: 'High · Fast', default: true }),
    sku('x-low', 'x', { effort: 'low', label: 'Low' }),
    model({ id: 'old-cached', name: 'Old' }),
  ];
  const groups = groupModels(listed);
  it('keeps the base order and every SKU', () => {
    assert.deepEqual(
      groups.map((g) => [g.id, g.members.length]),
      [
        ['gpt-5.5', 3],
        ['composer-2.5', 2],
        ['x', 2],
        ['old-cached', 1],
      ],
    );
  });
  it('an effort-only base gets a Thinking Effort menu, defaulting to the CLI default', () => {
    const info = toChatInformation(groups[0]) as {
      name: string;
      configurationSchema?: { properties: Record<string, Record<string, unknown>> };
    };
    assert.equal(info.name, 'GPT-5.5');
    assert.deepEqual(info.configurationSchema?.properties.reasoningEffort, {
      type: 'string',
      title: 'Thinking Effort',
      enum: ['default', 'low', 'high'],
      enumItemLabels: ['Standard', 'Low', 'High'],
      enumDescriptions: ['Cursor model gpt-5.5', 'Cursor model gpt-5.5-low', 'Cursor model gpt-5.5-high'],
      default: 'default',
      group: 'navigation',
    });
  });
  it('a fast/standard base gets a Speed menu of SKUs; mixed axes a Variant menu', () => {
    assert.equal(groups[1].choice?.title, 'Speed');
    assert.deepEqual(
      groups[1].choice?.options.map((o) => o.value),
      ['composer-2.5', 'composer-2.5-fast'],
    );
    assert.equal(groups[2].choice?.title, 'Variant');
    assert.equal(groups[2].choice?.default, 'x-high-fast');
    assert.equal(groups[3].choice, undefined);
    assert.equal((toChatInformation(groups[3]) as { configurationSchema?: unknown }).configurationSchema, undefined);
  });
  it('a request’s modelConfiguration picks the exact SKU; anything else the default', () => {
    const cases: [number, unknown, string][] = [
      [0, { reasoningEffort: 'high' }, 'gpt-5.5-high'],
      [0, { reasoningEffort: 'default' }, 'gpt-5.5'],
      [0, undefined, 'gpt-5.5'],
      [0, { reasoningEffort: 'ultra' }, 'gpt-5.5'],
      [0, { variant: 'gpt-5.5-low' }, 'gpt-5.5'],
      [1, { variant: 'composer-2.5-fast' }, 'composer-2.5-fast'],
      [2, { variant: 'x-low' }, 'x-low'],
      [2, 'x-low', 'x-high-fast'],
      [3, { reasoningEffort: 'high' }, 'old-cached'],
    ];
    for (const [i, configuration, want] of cases)
      assert.equal(resolveSku(groups[i], configuration), want, JSON.stringify(configuration));
  });
  it('variants that differ in effort and speed also offer reasoningEffort, which picks the SKU (the Copilot harness)', () => {
    const mixed = groupModels([
      sku('g', 'g', { label: 'Standard', default: true }),
      sku('g-high', 'g', { effort: 'high', label: 'High' }),
      sku('g-fast', 'g', { fast: true, label: 'Fast' }),
      sku('g-high-fast', 'g', { effort: 'high', fast: true, label: 'High · Fast' }),
      sku('g-low', 'g', { effort: 'low', label: 'Low' }),
    ])[0];
    assert.equal(mixed.choice?.key, 'variant');
    const props = (
      toChatInformation(mixed) as { configurationSchema?: { properties: Record<string, Record<string, unknown>> } }
    ).configurationSchema?.properties;
    assert.deepEqual(Object.keys(props ?? {}), ['variant', 'reasoningEffort']);
    assert.deepEqual(props?.reasoningEffort, {
      type: 'string',
      title: 'Thinking Effort',
      enum: ['default', 'low', 'high'],
      enumItemLabels: ['Standard', 'Low', 'High'],
      default: 'default',
    });
    const cases: [unknown, string][] = [
      [{ reasoningEffort: 'high' }, 'g-high'],
      [{ reasoningEffort: 'low' }, 'g-low'],
      [{ variant: 'g-fast', reasoningEffort: 'high' }, 'g-high-fast'],
      [{ variant: 'g-fast', reasoningEffort: 'low' }, 'g-low'],
      [{ variant: 'g-high-fast', reasoningEffort: 'default' }, 'g-high-fast'],
      [{ variant: 'g', reasoningEffort: 'ultra' }, 'g'],
    ];
    for (const [configuration, want] of cases)
      assert.equal(resolveSku(mixed, configuration), want, JSON.stringify(configuration));
    assert.equal(groups[0].effort, undefined, 'an effort-only base has its one menu');
    assert.equal(groups[1].effort, undefined, 'a speed-only base has no effort');
  });

  it('an entry claims images exactly when the sidecar says its SKUs take them (the harness reads imageInput as vision)', () => {
    for (const g of groups) {
      const caps = toChatInformation(g).capabilities as Record<string, unknown>;
      assert.deepEqual([caps.imageInput, caps.vision], [false, undefined], g.id);
    }
    const seeing = { ...model(), capabilities: { thinking: true, toolCalling: true, imageInput: true } };
    assert.equal(toChatInformation(seeing).capabilities.imageInput, true);
    const images = { thinking: false, toolCalling: true, imageInput: true };
    const [mixed] = groupModels([
      sku('a', 'a', { label: 'Standard', default: true }, { capabilities: images }),
      sku('a-fast', 'a', { fast: true, label: 'Fast' }),
    ]);
    assert.equal(
      toChatInformation(mixed).capabilities.imageInput,
      false,
      'one SKU without images: the entry claims none',
    );
  });

  it('entries are the user’s own, selectable models', () => {
    const info = toChatInformation(groups[1]) as {
      isUserSelectable?: boolean;
      isBYOK?: boolean;
      maxInputTokens: number;
    };
    assert.deepEqual([info.isUserSelectable, info.isBYOK, info.maxInputTokens], [true, true, 200_000]);
  });
});

describe('ModelCatalog.peekOrWait', () => {
  it('waits for a first-ever list, but not past its bound', async () => {
    let resolve: (m: ModelInfo[]) => void = () => undefined;
    const catalog = new ModelCatalog(
      () => new Promise((r) => (resolve = r)),
      () => undefined,
    );
    const waiting = catalog.peekOrWait(5_000);
    setTimeout(() => resolve([model()]), 20);
    assert.equal((await waiting).length, 1);
    const slow = new ModelCatalog(
      () => new Promise(() => undefined),
      () => undefined,
    );
    const t0 = Date.now();
    assert.deepEqual(await slow.peekOrWait(50), []);
    assert.ok(Date.now() - t0 < 2_000);
  });
  it('answers at once from a stored list', async () => {
    const catalog = new ModelCatalog(
      () => new Promise(() => undefined),
      () => undefined,
      { store: memoryStore({ 'cursorBridge.models.v1': [model()] }) },
    );
    assert.equal((await catalog.peekOrWait(60_000)).length, 1);
  });
});
