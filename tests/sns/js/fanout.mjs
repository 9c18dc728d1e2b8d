// The AWS SDK for JavaScript v3 against spoolq: a topic, two raw subscriptions (one filtered), a
// publish with attributes, a FIFO topic's publish, an AWS error; prints one JSON line of results.
import { SNSClient, CreateTopicCommand, SubscribeCommand, PublishCommand, GetTopicAttributesCommand,
         PublishBatchCommand } from "@aws-sdk/client-sns";
import { SQSClient, CreateQueueCommand, ReceiveMessageCommand } from "@aws-sdk/client-sqs";

const endpoint = process.argv[2], tag = process.argv[3];
const config = { endpoint, region: "us-east-1", credentials: { accessKeyId: "js", secretAccessKey: "js" } };
const sns = new SNSClient(config), sqs = new SQSClient(config);
const arn = (q) => `arn:aws:sqs:us-east-1:123456789012:${q}`;

const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: `js-${tag}`, Tags: [{ Key: "by", Value: "js" }] }));
const urls = {};
for (const q of [`all-${tag}`, `books-${tag}`]) urls[q] = (await sqs.send(new CreateQueueCommand({ QueueName: q }))).QueueUrl;
await sns.send(new SubscribeCommand({ TopicArn, Protocol: "sqs", Endpoint: arn(`all-${tag}`),
  Attributes: { RawMessageDelivery: "true" } }));
await sns.send(new SubscribeCommand({ TopicArn, Protocol: "sqs", Endpoint: arn(`books-${tag}`), ReturnSubscriptionArn: true,
  Attributes: { RawMessageDelivery: "true", FilterPolicy: JSON.stringify({ kind: ["book"] }) } }));
const published = await sns.send(new PublishCommand({ TopicArn, Message: "a book", Subject: "s",
  MessageAttributes: { kind: { DataType: "String", StringValue: "book" } } }));
await sns.send(new PublishCommand({ TopicArn, Message: "a pen", MessageAttributes: { kind: { DataType: "String", StringValue: "pen" } } }));
const batch = await sns.send(new PublishBatchCommand({ TopicArn, PublishBatchRequestEntries: [
  { Id: "a", Message: "batch a" }, { Id: "b", Message: "batch b" }] }));
const bodies = async (q, n) => {
  const got = [];
  for (let i = 0; i < 10 && got.length < n; i++) {
    const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: urls[q], MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
      MessageAttributeNames: ["All"] }));
    for (const m of r.Messages || []) got.push(m.Body);
  }
  return got.sort();
};
const attributes = (await sns.send(new GetTopicAttributesCommand({ TopicArn }))).Attributes;
let error = null;
try { await sns.send(new GetTopicAttributesCommand({ TopicArn: `${TopicArn}-none` })); }
catch (e) { error = { name: e.name, message: e.message, status: e.$metadata.httpStatusCode }; }
console.log(JSON.stringify({ topic: TopicArn, messageId: published.MessageId, batch: batch.Successful.map((s) => s.Id),
  all: await bodies(`all-${tag}`, 4), books: await bodies(`books-${tag}`, 1), confirmed: attributes.SubscriptionsConfirmed,
  error }));
