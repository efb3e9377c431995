import { describe, expect, it } from 'vitest';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { AccessDeniedError, ConfigError, PolicyInvalidError } from '../../functions/core/errors.js';

const ACCOUNT = '111122223333';
const OTHER_ACCOUNT = '444455556666';

const assumed = (role: string, account = ACCOUNT, session = 's1'): string =>
  `arn:aws:sts::${account}:assumed-role/${role}/${session}`;

/** A policy of plain roles, plus a user with a path and a role with a path. */
const POLICY = {
  scopes: ['ba_123', 'ba_456'],
  grants: [
    { principal: `arn:aws:iam::${ACCOUNT}:role/checkout`, scopes: ['ba_123'] },
    { principal: `arn:aws:iam::${ACCOUNT}:role/key-issuer`, unscoped: true },
    { principal: `arn:aws:iam::${ACCOUNT}:role/support`, scopes: ['*'] },
    { principal: `arn:aws:iam::${ACCOUNT}:role/team/payments`, scopes: ['ba_456'] },
    { principal: `arn:aws:iam::${ACCOUNT}:user/ops/alice`, scopes: ['ba_456'] },
  ],
};

const policy = (doc: unknown = POLICY): AccessPolicy => AccessPolicy.parse(JSON.stringify(doc));

/** Runs `fn`, expecting it to throw; returns what it threw. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('AccessPolicy.parse', () => {
  it('accepts a valid policy and lists its principals once each', () => {
    // Act
    const parsed = policy();

    // Assess
    expect([...parsed.scopes]).toEqual(['ba_123', 'ba_456']);
    expect(parsed.principals).toEqual(POLICY.grants.map((g) => g.principal));
  });

  it('rejects text that is not JSON, naming the source', () => {
    // Act
    const error = thrown(() => AccessPolicy.parse('{scopes: [', 'ACCESS_POLICY'));

    // Assess
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).name).toBe('ConfigError');
    expect((error as Error).message).toBe('ACCESS_POLICY is not valid JSON (line 1, column 2)');
  });

  it('regression: says where the JSON breaks when the parser does, never quoting the document', () => {
    // A missing comma: the parser names the offset, which becomes a line and column.
    const missingComma = '{\n  "scopes": ["ba_1"]\n  "grants": []\n}';
    // An unexpected token: the parser's message quotes the text around it.
    const secretToken = '{\n  "scopes": ["ba_1"],\n  "grants": [ sk_live_SECRET ]\n}';

    const errors = [missingComma, secretToken].map(
      (text) => thrown(() => AccessPolicy.parse(text, 'ACCESS_POLICY_FILE p.json')) as Error,
    );

    expect(errors.map((e) => e.message)).toEqual([
      'ACCESS_POLICY_FILE p.json is not valid JSON (line 3, column 3)',
      'ACCESS_POLICY_FILE p.json is not valid JSON',
    ]);
  });

  it.each([
    [
      'a value holding the words valibot ends with',
      {
        scopes: [],
        grants: [
          {
            principal: 'arn:aws:iam::111122223333:root',
            unscoped: 'a; grants.9.principal: forged but received sk_live_SECRET',
          },
        ],
      },
      ['grants.0.unscoped: Invalid type: Expected boolean'],
    ],
    [
      'an unknown field, whose name is a key of the document',
      { scopes: ['ba_1'], grants: [], 'sk_live_SECRET; forged: problem': 1 },
      ['(root): has a field it does not take'],
    ],
    [
      'an unknown field of a grant',
      {
        scopes: ['ba_1'],
        grants: [{ principal: 'arn:aws:iam::111122223333:root', 'sk_live_SECRET\nx': 1 }],
      },
      ['grants.0: has a field it does not take'],
    ],
    [
      'a repeated key-issuing id that is no id',
      {
        scopes: ['ba_1'],
        grants: [],
        keyIssuing: { businessApplicationIds: ['sk_live_SECRET; x', 'sk_live_SECRET; x'] },
      },
      [
        'keyIssuing.businessApplicationIds.0: is not a valid scope name',
        'keyIssuing.businessApplicationIds.1: is not a valid scope name',
        'keyIssuing.businessApplicationIds.1: repeats businessApplicationIds.0',
      ],
    ],
  ])('regression (review): %s is never quoted in a problem', (_label, doc, problems) => {
    const error = thrown(() => policy(doc));

    expect((error as PolicyInvalidError).problems).toEqual(problems);
    expect((error as Error).message).not.toContain('SECRET');
  });

  it("regression (review): a position quoted from the document is not taken for the parser's", () => {
    // V8 quotes text around an unexpected token; that text may itself read "at position".
    const text = '[at position 12345]';

    const error = thrown(() => AccessPolicy.parse(text, 'ACCESS_POLICY'));

    expect((error as Error).message).toBe('ACCESS_POLICY is not valid JSON');
  });

  it('regression: a problem names what was expected, never the value, so a value cannot forge problems', () => {
    const forged = 'tok; grants.99: forged problem; sk_live_SECRETVALUE';
    const doc = {
      scopes: ['ba_1'],
      grants: [{ principal: 'arn:aws:iam::111122223333:role/r', unscoped: forged }],
    };

    const error = thrown(() => policy(doc));

    expect(error).toBeInstanceOf(PolicyInvalidError);
    expect((error as PolicyInvalidError).problems).toEqual([
      'grants.0.unscoped: Invalid type: Expected boolean',
    ]);
    expect((error as Error).message).not.toContain('SECRETVALUE');
  });

  it.each([
    ['an array', []],
    ['missing grants', { scopes: ['ba_1'] }],
    ['scopes not an array', { scopes: 'ba_1', grants: [] }],
    ['an unknown top-level key', { scopes: [], grants: [], extra: 1 }],
    [
      'an unknown grant key',
      { scopes: [], grants: [{ principal: `arn:aws:iam::${ACCOUNT}:root`, role: 'x' }] },
    ],
    [
      'unscoped not a boolean',
      { scopes: [], grants: [{ principal: `arn:aws:iam::${ACCOUNT}:root`, unscoped: 'yes' }] },
    ],
    ['a scope with bad syntax', { scopes: ['.bad'], grants: [] }],
  ])('rejects a policy of the wrong shape: %s', (_label, doc) => {
    // Act
    const error = thrown(() => policy(doc));

    // Assess
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^ACCESS_POLICY is invalid: /);
  });

  it.each([
    'arn:aws:iam::111122223333:group/admins',
    'arn:aws:iam::11112222333:role/checkout',
    'arn:aws:sts::111122223333:assumed-role/checkout/s1',
    'arn:aws:iam::111122223333:role/',
    'arn:aws:iam::111122223333:root/extra',
    '*',
    'checkout',
  ])('rejects the principal %s', (principal) => {
    // Act
    const error = thrown(() => policy({ scopes: [], grants: [{ principal }] }));

    // Assess
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('grants.0.principal');
    expect((error as Error).message).toContain('must be an IAM role ARN');
  });

  it('takes a document of exactly 1 MiB, the most AppConfig stores, and refuses one byte more', () => {
    // Prepare: a valid document padded with whitespace to the limit and past it.
    const document = JSON.stringify(POLICY);
    const ofSize = (bytes: number): string => document + ' '.repeat(bytes - document.length);

    // Act
    const atLimit = AccessPolicy.parse(ofSize(1024 * 1024));
    const over = (): AccessPolicy => AccessPolicy.parse(ofSize(1024 * 1024 + 1));

    // Assess
    expect(atLimit.allows(assumed('checkout'), 'ba_123')).toBe(true);
    expect(over).toThrow(/\(document\): 1048577 bytes, over the 1048576 bytes/);
  });

  it('rejects a grant naming a scope that is not listed in scopes', () => {
    // Prepare
    const doc = {
      scopes: ['ba_123'],
      grants: [{ principal: `arn:aws:iam::${ACCOUNT}:role/checkout`, scopes: ['ba_999'] }],
    };

    // Act
    const error = thrown(() => policy(doc));

    // Assess
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      'ACCESS_POLICY is invalid: grants.0.scopes: "ba_999" is not listed in scopes',
    );
  });

  it('reports several shape problems at once in one message', () => {
    // Prepare
    const doc = {
      scopes: ['ba_1', ' bad'],
      grants: [
        { principal: 'arn:aws:iam::123:role/x', scopes: ['ba_1'] },
        { principal: `arn:aws:iam::${ACCOUNT}:role/ok`, unscoped: 'yes' },
      ],
    };

    // Act
    const error = thrown(() => policy(doc));

    // Assess
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain('scopes.1');
    expect(message).toContain('grants.0.principal');
    expect(message).toContain('grants.1.unscoped');
  });

  it('reports several unlisted scopes at once in one message', () => {
    // Prepare
    const doc = {
      scopes: ['ba_1'],
      grants: [
        { principal: `arn:aws:iam::${ACCOUNT}:role/a`, scopes: ['ba_2', 'ba_1'] },
        { principal: `arn:aws:iam::${ACCOUNT}:role/b`, scopes: ['ba_3'] },
      ],
    };

    // Act
    const error = thrown(() => policy(doc));

    // Assess
    const message = (error as Error).message;
    expect(message).toContain('grants.0.scopes: "ba_2" is not listed');
    expect(message).toContain('grants.1.scopes: "ba_3" is not listed');
    expect(message).not.toContain('"ba_1"');
  });

  it('reports a shape problem and an unlisted scope together', () => {
    // Prepare
    const doc = {
      scopes: ['ba_1'],
      grants: [
        { principal: 'not-an-arn', scopes: ['ba_1'] },
        { principal: `arn:aws:iam::${ACCOUNT}:role/b`, scopes: ['ba_3'] },
      ],
    };

    // Act
    const error = thrown(() => policy(doc));

    // Assess
    const message = (error as Error).message;
    expect(message).toContain('grants.0.principal');
    expect(message).toContain('grants.1.scopes: "ba_3" is not listed in scopes');
  });
});

describe('AccessPolicy.allows', () => {
  it('matches a role grant to a session of that role in the same account', () => {
    // Prepare
    const parsed = policy();

    // Act
    const allowed = parsed.allows(assumed('checkout'), 'ba_123');

    // Assess
    expect(allowed).toBe(true);
  });

  it('does not match a session of the same role name in another account', () => {
    // Act
    const allowed = policy().allows(assumed('checkout', OTHER_ACCOUNT), 'ba_123');

    // Assess
    expect(allowed).toBe(false);
  });

  it('does not match a session of another role', () => {
    // Act
    const results = [
      policy().allows(assumed('checkout-admin'), 'ba_123'),
      policy().allows(assumed('Checkout'), 'ba_123'),
      policy().allows(assumed('key-issuer'), 'ba_123'),
    ];

    // Assess
    expect(results).toEqual([false, false, false]);
  });

  it('does not match a session in another partition', () => {
    // Act
    const allowed = policy().allows(
      `arn:aws-cn:sts::${ACCOUNT}:assumed-role/checkout/s1`,
      'ba_123',
    );

    // Assess
    expect(allowed).toBe(false);
  });

  it('matches a role with a path to its sessions (STS drops role paths)', () => {
    // Prepare
    const parsed = policy({
      scopes: ['ba_1'],
      grants: [{ principal: `arn:aws:iam::${ACCOUNT}:role/team/checkout`, scopes: ['ba_1'] }],
    });

    // Act
    const allowed = parsed.allows(`arn:aws:sts::${ACCOUNT}:assumed-role/checkout/s1`, 'ba_1');

    // Assess
    expect(allowed).toBe(true);
  });

  it.each([
    [`arn:aws:iam::${ACCOUNT}:role/team#1/app`, assumed('app')],
    [`arn:aws:iam::${ACCOUNT}:role/a:b/c~d/app`, assumed('app')],
    [`arn:aws:iam::${ACCOUNT}:user/ops!/alice`, `arn:aws:iam::${ACCOUNT}:user/ops!/alice`],
  ])(
    'regression: grants %s, whose path holds characters IAM allows in paths',
    (principal, caller) => {
      // IAM paths may hold any ASCII character from ! through DEL; such a
      // principal could not be granted at all.
      const parsed = policy({ scopes: ['ba_1'], grants: [{ principal, scopes: ['ba_1'] }] });

      expect(parsed.allows(caller, 'ba_1')).toBe(true);
    },
  );

  it('regression: grants and admits a principal of a partition AWS names aws-<name> (aws-eusc)', () => {
    const parsed = policy({
      scopes: ['ba_1'],
      grants: [{ principal: `arn:aws-eusc:iam::${ACCOUNT}:role/checkout`, scopes: ['ba_1'] }],
    });

    expect(parsed.allows(`arn:aws-eusc:sts::${ACCOUNT}:assumed-role/checkout/s1`, 'ba_1')).toBe(
      true,
    );
    expect(parsed.allows(assumed('checkout'), 'ba_1')).toBe(false);
  });

  it('matches a user grant only on the exact user ARN, path included', () => {
    // Prepare
    const parsed = policy();

    // Act
    const exact = parsed.allows(`arn:aws:iam::${ACCOUNT}:user/ops/alice`, 'ba_456');
    const otherPath = parsed.allows(`arn:aws:iam::${ACCOUNT}:user/alice`, 'ba_456');
    const otherAccount = parsed.allows(`arn:aws:iam::${OTHER_ACCOUNT}:user/ops/alice`, 'ba_456');
    const sameNameRole = parsed.allows(assumed('alice'), 'ba_456');

    // Assess
    expect({ exact, otherPath, otherAccount, sameNameRole }).toEqual({
      exact: true,
      otherPath: false,
      otherAccount: false,
      sameNameRole: false,
    });
  });

  it('matches an account root grant to any principal of that account only', () => {
    // Prepare
    const parsed = policy({
      scopes: ['ba_1'],
      grants: [{ principal: `arn:aws:iam::${ACCOUNT}:root`, scopes: ['ba_1'] }],
    });

    // Act
    const results = [
      parsed.allows(assumed('anything', ACCOUNT, 'session@example.com'), 'ba_1'),
      parsed.allows(`arn:aws:iam::${ACCOUNT}:user/bob`, 'ba_1'),
      parsed.allows(`arn:aws:iam::${ACCOUNT}:root`, 'ba_1'),
      parsed.allows(assumed('anything', OTHER_ACCOUNT), 'ba_1'),
    ];

    // Assess
    expect(results).toEqual([true, true, true, false]);
  });

  it('grants every listed scope for "*", but not the unscoped token', () => {
    // Prepare
    const parsed = policy();

    // Act
    const results = [
      parsed.allows(assumed('support'), 'ba_123'),
      parsed.allows(assumed('support'), 'ba_456'),
      parsed.allows(assumed('support'), undefined),
    ];

    // Assess
    expect(results).toEqual([true, true, false]);
  });

  it('grants only the scopes a grant names', () => {
    // Act
    const allowed = policy().allows(assumed('checkout'), 'ba_456');

    // Assess
    expect(allowed).toBe(false);
  });

  it('grants the unscoped token only with unscoped: true', () => {
    // Prepare
    const parsed = policy();

    // Act
    const results = [
      parsed.allows(assumed('key-issuer'), undefined),
      parsed.allows(assumed('key-issuer'), 'ba_123'),
      parsed.allows(assumed('checkout'), undefined),
    ];

    // Assess
    expect(results).toEqual([true, false, false]);
  });

  it('denies a scope that is not configured, even to "*" and to a root grant', () => {
    // Prepare
    const parsed = policy({
      scopes: ['ba_1'],
      grants: [
        { principal: `arn:aws:iam::${ACCOUNT}:role/support`, scopes: ['*'] },
        { principal: `arn:aws:iam::${ACCOUNT}:root`, scopes: ['*'], unscoped: true },
      ],
    });

    // Act
    const results = [
      parsed.allows(assumed('support'), 'ba_unknown'),
      parsed.allows(assumed('other'), 'ba_unknown'),
    ];

    // Assess
    expect(results).toEqual([false, false]);
  });

  it('denies by default when there are no grants', () => {
    // Act
    const allowed = policy({ scopes: ['ba_1'], grants: [] }).allows(assumed('checkout'), 'ba_1');

    // Assess
    expect(allowed).toBe(false);
  });

  it.each([
    '',
    'checkout',
    `arn:aws:sts::${ACCOUNT}:assumed-role/checkout`,
    `arn:aws:sts::${ACCOUNT}:assumed-role/checkout/`,
    `arn:aws:iam::${ACCOUNT}:assumed-role/checkout/s1`,
    `arn:aws:sts::${ACCOUNT}:role/checkout`,
    `arn:aws:sts::1111:assumed-role/checkout/s1`,
    `arn:aws:sts::${ACCOUNT}:assumed-role/checkout/s1\n`,
    ` arn:aws:sts::${ACCOUNT}:assumed-role/checkout/s1`,
    `arn:aws:iam::${ACCOUNT}:role/checkout/`,
    // Regression: an assumed-role ARN is exactly a role and a session.
    `arn:aws:sts::${ACCOUNT}:assumed-role/checkout/s1/x`,
    `arn:aws:sts::${ACCOUNT}:assumed-role/checkout/s1 `,
    `arn:aws:sts::${ACCOUNT}:assumed-role/check out/s1`,
  ])('denies the malformed caller ARN %j', (callerArn) => {
    // Prepare: a root grant would match any well-formed principal of the account.
    const parsed = policy({
      scopes: ['ba_123'],
      grants: [
        { principal: `arn:aws:iam::${ACCOUNT}:role/checkout`, scopes: ['ba_123'], unscoped: true },
        { principal: `arn:aws:iam::${ACCOUNT}:root`, scopes: ['ba_123'], unscoped: true },
      ],
    });

    // Act
    const results = [parsed.allows(callerArn, 'ba_123'), parsed.allows(callerArn, undefined)];

    // Assess
    expect(results).toEqual([false, false]);
  });
});

describe('AccessPolicy.allows: federated users (GetFederationToken)', () => {
  const federated = (name: string, account = ACCOUNT, partition = 'aws'): string =>
    `arn:${partition}:sts::${account}:federated-user/${name}`;

  const rootPolicy = (account = ACCOUNT): AccessPolicy =>
    policy({
      scopes: ['ba_1'],
      grants: [{ principal: `arn:aws:iam::${account}:root`, scopes: ['ba_1'], unscoped: true }],
    });

  it('regression: a federated user is granted under a root grant of its account and partition', () => {
    // Act
    const results = [
      rootPolicy().allows(federated('alice'), 'ba_1'),
      rootPolicy().allows(federated('bob@example.com'), undefined),
    ];

    // Assess
    expect(results).toEqual([true, true]);
  });

  it('denies a federated user under the root grant of another account or partition', () => {
    // Act
    const results = [
      rootPolicy(OTHER_ACCOUNT).allows(federated('alice'), 'ba_1'),
      rootPolicy().allows(federated('alice', OTHER_ACCOUNT), 'ba_1'),
      rootPolicy().allows(federated('alice', ACCOUNT, 'aws-cn'), 'ba_1'),
    ];

    // Assess
    expect(results).toEqual([false, false, false]);
  });

  it('denies a federated user under a role or user grant of the same name', () => {
    // Prepare
    const parsed = policy({
      scopes: ['ba_1'],
      grants: [
        { principal: `arn:aws:iam::${ACCOUNT}:role/alice`, scopes: ['ba_1'], unscoped: true },
        { principal: `arn:aws:iam::${ACCOUNT}:role/team/carol`, scopes: ['ba_1'] },
        { principal: `arn:aws:iam::${ACCOUNT}:user/bob`, scopes: ['ba_1'], unscoped: true },
      ],
    });

    // Act
    const results = [
      parsed.allows(federated('alice'), 'ba_1'),
      parsed.allows(federated('alice'), undefined),
      parsed.allows(federated('carol'), 'ba_1'),
      parsed.allows(federated('bob'), 'ba_1'),
      parsed.allows(federated('bob'), undefined),
    ];

    // Assess
    expect(results).toEqual([false, false, false, false, false]);
  });

  it('still needs the scope or unscoped grant under root', () => {
    // Prepare
    const parsed = policy({
      scopes: ['ba_1', 'ba_2'],
      grants: [{ principal: `arn:aws:iam::${ACCOUNT}:root`, scopes: ['ba_1'] }],
    });

    // Act
    const results = [
      parsed.allows(federated('alice'), 'ba_1'),
      parsed.allows(federated('alice'), 'ba_2'),
      parsed.allows(federated('alice'), undefined),
    ];

    // Assess
    expect(results).toEqual([true, false, false]);
  });

  it.each([
    `arn:aws:sts::${ACCOUNT}:federated-user`,
    `arn:aws:sts::${ACCOUNT}:federated-user/`,
    `arn:aws:sts::${ACCOUNT}:federated-user/alice/extra`,
    `arn:aws:sts::${ACCOUNT}:federated-user//alice`,
    `arn:aws:iam::${ACCOUNT}:federated-user/alice`,
    `arn:aws:sts::${ACCOUNT}:federated-user/al ice`,
    `arn:aws:sts::${ACCOUNT}:federated-user/<alice>`,
    `arn:aws:sts::${ACCOUNT}:federated-user/alice\n`,
    `arn:aws:sts::1111:federated-user/alice`,
    `arn:aws:sts::${ACCOUNT}:federated-users/alice`,
  ])('denies the malformed federated ARN %j under a root grant', (callerArn) => {
    // Act
    const results = [
      rootPolicy().allows(callerArn, 'ba_1'),
      rootPolicy().allows(callerArn, undefined),
    ];

    // Assess
    expect(results).toEqual([false, false]);
  });

  it.each([federated('alice'), `arn:aws:iam::${ACCOUNT}:federated-user/alice`])(
    'rejects the federated-user ARN %s as a grant principal',
    (principal) => {
      // Act
      const error = thrown(() => policy({ scopes: [], grants: [{ principal }] }));

      // Assess
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain('grants.0.principal');
    },
  );
});

describe('AccessPolicy.authorize', () => {
  it('returns quietly for a granted scope', () => {
    // Act / Assess
    expect(() => policy().authorize(assumed('checkout'), 'ba_123')).not.toThrow();
  });

  it('throws access_denied (403) for a configured scope that is not granted', () => {
    // Act
    const error = thrown(() => policy().authorize(assumed('checkout'), 'ba_456'));

    // Assess
    expect(error).toBeInstanceOf(AccessDeniedError);
    expect(error).toMatchObject({ code: 'access_denied', status: 403, name: 'AccessDeniedError' });
  });

  it('answers a scope that does not exist exactly as one that is not granted', () => {
    // Prepare
    const parsed = policy();

    // Act
    const notGranted = thrown(() =>
      parsed.authorize(assumed('checkout'), 'ba_456'),
    ) as AccessDeniedError;
    const notConfigured = thrown(() =>
      parsed.authorize(assumed('checkout'), 'ba_nope'),
    ) as AccessDeniedError;

    // Assess
    expect(notConfigured).toMatchObject({ code: 'access_denied', status: 403 });
    expect(notConfigured.message).toBe(notGranted.message);
    expect(notConfigured.title).toBe(notGranted.title);
    expect(notConfigured.message).not.toContain('ba_nope');
  });

  it('throws access_denied (403) for the unscoped token without unscoped: true', () => {
    // Act
    const error = thrown(() => policy().authorize(assumed('support'), undefined));

    // Assess
    expect(error).toMatchObject({ code: 'access_denied', status: 403 });
    expect((error as Error).message).toBe('The caller is not granted the unscoped token.');
  });

  it('throws access_denied (403) for a malformed caller ARN, without echoing it', () => {
    // Act
    const error = thrown(() => policy().authorize('arn:aws:sts::x:<script>', 'ba_123'));

    // Assess
    expect(error).toMatchObject({ code: 'access_denied', status: 403 });
    expect((error as Error).message).not.toContain('<script>');
  });
});

describe('the reserved scope name', () => {
  it('refuses a scope named "unscoped": admin events and reports use that name for the unscoped token', () => {
    expect(() =>
      AccessPolicy.parse(JSON.stringify({ scopes: ['ba_1', 'unscoped'], grants: [] })),
    ).toThrow(/scopes: "unscoped" is reserved/);
  });
});
