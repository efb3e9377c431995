import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  DEMO_PROVIDER_CREDENTIALS,
  type PendingFaults,
  type ProviderSimulator,
  startProviderSimulator,
} from '../../local/provider-simulator.js';

const { key: KEY, secret: SECRET } = DEMO_PROVIDER_CREDENTIALS;

let sim: ProviderSimulator;

beforeAll(async () => {
  sim = await startProviderSimulator({ port: 0 });
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

const faults = (query = '', init: RequestInit = {}) =>
  fetch(`${sim.url}/__simulator/faults${query}`, init);
const inject = (request: unknown) => faults('', { method: 'POST', body: JSON.stringify(request) });
const list = async (query = ''): Promise<Partial<PendingFaults>> => {
  const res = await faults(query);
  expect(res.status).toBe(200);
  return (await res.json()) as Partial<PendingFaults>;
};

/** One token request as the vend function sends it; its status. */
async function tokenStatus(): Promise<number> {
  const res = await fetch(`${sim.url}/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${KEY}:${SECRET}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=ba_demo_1',
  });
  await res.body?.cancel();
  return res.status;
}

describe('listing pending faults (GET /__simulator/faults)', () => {
  it('lists nothing when no fault is pending', async () => {
    expect(await list()).toEqual({ token: [], keys: [] });
  });

  it('lists each endpoint’s faults in the order they apply, with the requests each has left', async () => {
    // Prepare
    await inject({
      endpoint: 'token',
      fault: { kind: 'status', status: 503, retryAfter: 2 },
      times: 3,
    });
    await inject({ endpoint: 'token', fault: { kind: 'latency', ms: 10 } });
    await inject({ endpoint: 'keys', fault: { kind: 'dropAfterCommit' }, times: 2 });

    // Act
    const before = await list();
    await tokenStatus();
    const after = await list();

    // Assess
    expect(before).toEqual({
      token: [
        { fault: { kind: 'status', status: 503, retryAfter: 2 }, remaining: 3 },
        { fault: { kind: 'latency', ms: 10 }, remaining: 1 },
      ],
      keys: [{ fault: { kind: 'dropAfterCommit' }, remaining: 2 }],
    });
    expect(after.token?.[0]).toEqual({
      fault: { kind: 'status', status: 503, retryAfter: 2 },
      remaining: 2,
    });
  });

  it('drops a fault from the list once it has been used up', async () => {
    await inject({ endpoint: 'token', fault: { kind: 'status', status: 500 } });

    expect(await tokenStatus()).toBe(500);

    expect(await list()).toEqual({ token: [], keys: [] });
  });

  it('lists one endpoint with ?endpoint=', async () => {
    await inject({ endpoint: 'keys', fault: { kind: 'malformed' } });

    expect(await list('?endpoint=keys')).toEqual({
      keys: [{ fault: { kind: 'malformed' }, remaining: 1 }],
    });
    expect(await list('?endpoint=token')).toEqual({ token: [] });
  });

  it('shows a fault queued in-process without a limit as unlimited', async () => {
    sim.injectTokenFault({ kind: 'hang' }, Number.POSITIVE_INFINITY);

    expect(await list('?endpoint=token')).toEqual({
      token: [{ fault: { kind: 'hang' }, remaining: 'unlimited' }],
    });
  });
});

describe('clearing pending faults (DELETE /__simulator/faults)', () => {
  it('clears every pending fault, answers what it cleared, and requests succeed again', async () => {
    // Prepare: a fault left over from earlier
    await inject({ endpoint: 'token', fault: { kind: 'status', status: 503 }, times: 5 });
    await inject({ endpoint: 'keys', fault: { kind: 'hang' } });

    // Act
    const res = await faults('', { method: 'DELETE' });

    // Assess
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      cleared: {
        token: [{ fault: { kind: 'status', status: 503 }, remaining: 5 }],
        keys: [{ fault: { kind: 'hang' }, remaining: 1 }],
      },
    });
    expect(await list()).toEqual({ token: [], keys: [] });
    expect(await tokenStatus()).toBe(200);
  });

  it.each([
    ['token', 'keys'],
    ['keys', 'token'],
  ] as const)(
    'clears only the %s faults with ?endpoint=, keeping the %s ones',
    async (cleared, kept) => {
      await inject({ endpoint: 'token', fault: { kind: 'status', status: 503 } });
      await inject({ endpoint: 'keys', fault: { kind: 'status', status: 500 } });

      const res = await faults(`?endpoint=${cleared}`, { method: 'DELETE' });

      expect(res.status).toBe(200);
      const left = await list();
      expect(left[cleared]).toEqual([]);
      expect(left[kept]).toHaveLength(1);
    },
  );

  it('clears in-process faults too (sim.clearFaults with an endpoint)', async () => {
    sim.injectTokenFault({ kind: 'malformed' });
    sim.injectKeysFault({ kind: 'malformed' });

    sim.clearFaults('keys');

    expect(await list()).toEqual({
      token: [{ fault: { kind: 'malformed' }, remaining: 1 }],
      keys: [],
    });
  });
});

describe('refusals', () => {
  it.each([
    ['an unknown endpoint', '?endpoint=other'],
    ['another parameter', '?kind=status'],
    ['a repeated endpoint', '?endpoint=token&endpoint=keys'],
  ])('refuses %s with 400 and clears nothing', async (_label, query) => {
    await inject({ endpoint: 'token', fault: { kind: 'malformed' } });

    const listed = await faults(query);
    const deleted = await faults(query, { method: 'DELETE' });

    expect([listed.status, deleted.status]).toEqual([400, 400]);
    expect(((await deleted.json()) as { error: string }).error).toBe('invalid_request');
    expect((await list()).token).toHaveLength(1);
  });

  it('answers 405 with the methods it takes', async () => {
    const res = await faults('', { method: 'PUT', body: '{}' });

    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST, DELETE');
  });
});
