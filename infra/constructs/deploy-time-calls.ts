import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';

const PROVIDER_ID = 'DeployTimeCalls';

/**
 * The role and log group of the Lambda function that makes the stack's
 * deploy-time AWS SDK calls. CDK runs every AwsCustomResource of a stack in
 * one function, created with the role and log group of the first it meets and
 * reused for the rest, so they are made once, here, for all of them.
 */
class DeployTimeCallsProvider extends Construct {
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, logRetention: logs.RetentionDays) {
    super(scope, id);
    // Its own role and log group: no managed policy, and a retention.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: "Makes the stack's deploy-time AWS SDK calls (CDK AwsCustomResource)",
    });
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.logGroup.grantWrite(this.role);
  }
}

export interface DeployTimeCallProps {
  readonly resourceType: string;
  readonly onCreate: cr.AwsSdkCall;
  readonly onUpdate?: cr.AwsSdkCall;
  /** Exactly what the call needs; added to the shared role as a policy of this call's own. */
  readonly statements: iam.PolicyStatement[];
  readonly logRetention: logs.RetentionDays;
}

/** An AWS SDK call the stack makes as it deploys, through the stack's one shared provider. */
export function deployTimeCall(
  scope: Construct,
  id: string,
  props: DeployTimeCallProps,
): cr.AwsCustomResource {
  const stack = Stack.of(scope);
  const provider =
    (stack.node.tryFindChild(PROVIDER_ID) as DeployTimeCallsProvider | undefined) ??
    new DeployTimeCallsProvider(stack, PROVIDER_ID, props.logRetention);
  return new cr.AwsCustomResource(scope, id, {
    resourceType: props.resourceType,
    onCreate: props.onCreate,
    ...(props.onUpdate ? { onUpdate: props.onUpdate } : {}),
    policy: cr.AwsCustomResourcePolicy.fromStatements(props.statements),
    role: provider.role,
    logGroup: provider.logGroup,
    installLatestAwsSdk: false,
  });
}
