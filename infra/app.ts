import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { SynthInputError, selectStage } from './config.js';
import { DEFAULT_STAGE, stages } from './stages/index.js';
import { TokenVendingStack } from './token-vending-stack.js';

// `npx cdk synth|deploy -c stage=<name>`; the example stage by default.
const app = new App();
try {
  const config = selectStage(stages, app.node.tryGetContext('stage'), DEFAULT_STAGE);
  new TokenVendingStack(app, `TokenVending-${config.stage}`, {
    config,
    env: {
      account: config.account ?? process.env.CDK_DEFAULT_ACCOUNT,
      region: config.region ?? process.env.CDK_DEFAULT_REGION,
    },
    description: `Token vending functions (${config.stage}): provider OAuth tokens for IAM callers`,
  });
} catch (error) {
  // Every problem of the stage or a context value, without a stack trace in front of it.
  if (!(error instanceof SynthInputError)) throw error;
  console.error(error.message);
  process.exit(1);
}
// Any finding not acknowledged where it arises fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
