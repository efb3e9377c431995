/**
 * cdk-nag (AwsSolutions) in this app: each acknowledgement names one finding,
 * `RuleId[FindingId]`, with the reason a security reviewer reads. IAM5
 * findings name a resource as cdk-nag flattens it (`<AWS::Region>` for a Ref,
 * `<Logical.Attr>` for a GetAtt), so ids are built here the same way.
 */
import { type IResolvable, Stack, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/** Flattens a resolved CloudFormation value the way cdk-nag names IAM5 resources. */
export function flatten(node: unknown): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return node.replace(/\$\{/g, '<').replace(/\}/g, '>');
  if (typeof node === 'object' && node !== null) {
    const value = node as Record<string, unknown>;
    if (value['Fn::Join']) {
      const [delimiter, items] = value['Fn::Join'] as [string, unknown[]];
      return items.map(flatten).join(delimiter);
    }
    if (value['Fn::Sub']) return flatten(value['Fn::Sub']);
    if (value['Fn::GetAtt']) {
      const [resource, attribute] = value['Fn::GetAtt'] as [unknown, unknown];
      return `<${flatten(resource)}.${flatten(attribute)}>`;
    }
    if (value.Ref) return `<${flatten(value.Ref)}>`;
  }
  return JSON.stringify(node);
}

/** Acknowledges the IAM5 finding for one wildcard resource of a policy in `scope`. */
export function acknowledgeWildcardResource(
  scope: IConstruct,
  resource: string | IResolvable,
  reason: string,
): void {
  const flat = flatten(Stack.of(scope).resolve(resource));
  Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::${flat}]`, reason });
}

/** Acknowledges the IAM5 finding for one wildcard action of a policy in `scope`. */
export function acknowledgeWildcardAction(scope: IConstruct, action: string, reason: string): void {
  Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Action::${action}]`, reason });
}
