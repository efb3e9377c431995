/**
 * cdk-nag AwsSolutions over the whole app, as `npm run synth` applies it
 * (CloudFormation's own template check on too). A fresh app per test.
 */
import { Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { buildStack, stage } from '../support/infra.js';

/** Every acknowledgement in the app: construct path -> finding id -> reason. */
function acknowledgements(
  app: ReturnType<typeof buildStack>['app'],
): Map<string, Record<string, string>> {
  const found = new Map<string, Record<string, string>>();
  for (const construct of app.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY) {
        found.set(construct.node.path, {
          ...found.get(construct.node.path),
          ...(entry.data as Record<string, string>),
        });
      }
    }
  }
  return found;
}

// The CloudFormation schema check of a whole template takes seconds on a busy 2-core machine.
describe('cdk-nag AwsSolutions', { timeout: 90_000 }, () => {
  it('passes the example stage with no unacknowledged finding', () => {
    const { app } = buildStack(undefined, { nag: true });

    expect(() => app.synth()).not.toThrow();
  });

  it('fails the synth on a finding nobody acknowledged', () => {
    const { app, stack } = buildStack(undefined, { nag: true });
    new sqs.Queue(stack, 'UnacknowledgedQueue', { encryption: sqs.QueueEncryption.UNENCRYPTED });

    let report = '';
    try {
      app.synth();
    } catch (error) {
      report = (error as Error).message;
    }

    // Only the new queue is reported, for each rule it breaks.
    expect(report).toContain('AwsSolutions-SQS2');
    expect(report).toContain('AwsSolutions-SQS3');
    expect(report).toContain('AwsSolutions-SQS4');
    expect(report.match(/^ERROR /gm)).toHaveLength(3);
    expect(report).not.toContain('FailedRuns');
  });

  it('acknowledges exactly six findings, each by its exact id with a reason', () => {
    const { app } = buildStack(undefined, { nag: true });
    const found = acknowledgements(app);

    expect([...found.keys()].sort()).toEqual([
      'TokenVending-example/AccessPolicy/AlarmRole',
      'TokenVending-example/FailedRuns/Queue',
      'TokenVending-example/Guardrails/CallerBoundary',
      'TokenVending-example/KeyIssuing/IssueKeys/Role',
      'TokenVending-example/Releases/Role',
    ]);
    // A permissions boundary's Allow * grants nothing by itself.
    expect(Object.keys(found.get('TokenVending-example/Guardrails/CallerBoundary') ?? {})).toEqual([
      'Annotation::AwsSolutions-IAM5[Action::*]',
      'Annotation::AwsSolutions-IAM5[Resource::*]',
    ]);
    expect(Object.keys(found.get('TokenVending-example/FailedRuns/Queue') ?? {})).toEqual([
      'Annotation::AwsSolutions-SQS3',
    ]);
    expect(Object.keys(found.get('TokenVending-example/KeyIssuing/IssueKeys/Role') ?? {})).toEqual([
      'Annotation::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:token-vending/example/basic-auth/*]',
    ]);
    for (const reasons of found.values()) {
      for (const reason of Object.values(reasons)) expect(reason.length).toBeGreaterThan(150);
    }
  });

  it('still matches its findings when the stage pins an account and region', () => {
    const { app } = buildStack(stage({ account: '123456789012', region: 'eu-west-1' }), {
      nag: true,
    });

    expect(() => app.synth()).not.toThrow();
  });
});
