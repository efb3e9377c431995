import { afterEach, describe, expect, it } from 'vitest';
import {
  askStackForPolicy,
  askStackToForget,
  CONTROL_TOKEN_HEADER,
  type StackControl,
  startStackControl,
} from '../../local/stack-control.js';

describe("the local stack's control endpoint", () => {
  let control: StackControl;
  const asked: unknown[] = [];
  afterEach(async () => {
    await control?.close();
    asked.length = 0;
  });

  const post = (body: string, token?: string) =>
    fetch(`${control.url}/forget`, {
      method: 'POST',
      headers: token === undefined ? {} : { [CONTROL_TOKEN_HEADER]: token },
      body,
    }).then((r) => r.status);

  it('tells every instance to forget a scope, or everything, when asked with its token', async () => {
    control = await startStackControl({ forget: (request) => asked.push(request) });

    const scoped = await askStackToForget(control, { scopes: ['ba_1', 'unscoped'] });
    const all = await askStackToForget(control, { all: true });

    expect([scoped, all]).toEqual([true, true]);
    expect(asked).toEqual([{ scopes: ['ba_1', 'unscoped'] }, { all: true }]);
  });

  it('refuses a request without its token, or with another, and a body it does not know', async () => {
    control = await startStackControl({ forget: (request) => asked.push(request) });

    expect(await post('{"all":true}')).toBe(403);
    expect(await post('{"all":true}', 'x'.repeat(control.token.length))).toBe(403);
    expect(await post('{"all":false}', control.token)).toBe(400);
    expect(await post('not json', control.token)).toBe(400);
    expect(asked).toEqual([]);
  });

  it('hands the policy text in force to its token only, and says when it has none', async () => {
    let text: string | undefined = '{"scopes":[],"grants":[]}';
    control = await startStackControl(
      { forget: () => undefined },
      { policyInForce: async () => text },
    );
    const unsigned = await fetch(`${control.url}/policy`).then((r) => r.status);

    const given = await askStackForPolicy(control);
    text = undefined;
    const none = await askStackForPolicy(control);

    expect(unsigned).toBe(403);
    expect(given).toBe('{"scopes":[],"grants":[]}');
    expect(none).toBeUndefined();
  });

  it('answers false, never throws, when no stack listens', async () => {
    control = await startStackControl({ forget: () => undefined });
    const gone = { url: control.url, token: control.token };
    await control.close();

    expect(await askStackToForget(gone, { all: true })).toBe(false);
  });
});
