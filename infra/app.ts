import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { selectStage } from './config.js';
import { DEFAULT_STAGE, stages } from './stages/index.js';
import { TokenVendingStack } from './token-vending-stack.js';

// `npx cdk synth|deploy -c stage=<name>`; the example stage by default.
const app = new App();
const config = selectStage(stages, app.node.tryGetContext('stage'), DEFAULT_STAGE);
new TokenVendingStack(app, `TokenVending-${config.stage}`, {
  config,
  env: {
    account: config.account ?? process.env.CDK_DEFAULT_ACCOUNT,
    region: config.region ?? process.env.CDK_DEFAULT_REGION,
  },
  description: `Token vending functions (${config.stage}): provider OAuth tokens for IAM callers`,
});
// Any finding not acknowledged where it arises fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
