package io.spoolq.clients.sqs;

import io.spoolq.clients.Checks;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.BatchEntryIdsNotDistinctException;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchResponse;
import software.amazon.awssdk.services.sqs.model.EmptyBatchRequestException;
import software.amazon.awssdk.services.sqs.model.InvalidAttributeNameException;
import software.amazon.awssdk.services.sqs.model.InvalidBatchEntryIdException;
import software.amazon.awssdk.services.sqs.model.InvalidMessageContentsException;
import software.amazon.awssdk.services.sqs.model.ListMessageMoveTasksResultEntry;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.MessageNotInflightException;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.PurgeQueueInProgressException;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;
import software.amazon.awssdk.services.sqs.model.QueueNameExistsException;
import software.amazon.awssdk.services.sqs.model.ReceiptHandleIsInvalidException;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;
import software.amazon.awssdk.services.sqs.model.SendMessageResponse;
import software.amazon.awssdk.services.sqs.model.SqsException;
import software.amazon.awssdk.services.sqs.model.TooManyEntriesInBatchRequestException;

/** The {@code SqsClient} scenarios: standard and FIFO queues, batches, visibility, dead letters, long polls, errors. */
final class SyncScenarios {
    private final Checks checks;
    private final SqsClient sqs;
    private final String run;

    SyncScenarios(Checks checks, SqsClient sqs, String run) {
        this.checks = checks;
        this.sqs = sqs;
        this.run = run;
    }

    void runAll() {
        checks.step("standard queue", this::standardQueue);
        checks.step("message sizes", this::sizes);
        checks.step("batches", this::batches);
        checks.step("visibility", this::visibility);
        checks.step("long poll", this::longPoll);
        checks.step("fifo queue", this::fifo);
        checks.step("dead-letter queue", this::deadLetters);
        checks.step("modelled errors", this::errors);
        checks.step("purge, tags, list, delete", this::lifecycle);
    }

    private String create(String name, Map<QueueAttributeName, String> attributes) {
        return sqs.createQueue(b -> b.queueName(name).attributes(attributes)).queueUrl();
    }

    private Map<QueueAttributeName, String> attributes(String url) {
        return sqs.getQueueAttributes(b -> b.queueUrl(url).attributeNames(QueueAttributeName.ALL)).attributes();
    }

    private List<Message> receive(String url, int max, int waitSeconds) {
        return sqs.receiveMessage(ReceiveMessageRequest.builder().queueUrl(url).maxNumberOfMessages(max)
                .waitTimeSeconds(waitSeconds).messageAttributeNames("All")
                .messageSystemAttributeNames(MessageSystemAttributeName.ALL).build()).messages();
    }

    static Map<String, MessageAttributeValue> sampleAttributes() {
        Map<String, MessageAttributeValue> attributes = new HashMap<>();
        attributes.put("Text", MessageAttributeValue.builder().dataType("String").stringValue("héllo wörld ✓").build());
        attributes.put("Count", MessageAttributeValue.builder().dataType("Number").stringValue("12345.678").build());
        attributes.put("Blob", MessageAttributeValue.builder().dataType("Binary")
                .binaryValue(SdkBytes.fromByteArray(new byte[] {0, 1, 2, (byte) 0xfe, (byte) 0xff})).build());
        attributes.put("Kind.custom", MessageAttributeValue.builder().dataType("String.custom").stringValue("x").build());
        return attributes;
    }

    private void standardQueue() {
        String url = create(run + "-std", Map.of(QueueAttributeName.VISIBILITY_TIMEOUT, "30"));
        checks.equal("CreateQueue again with the same attributes returns the same URL", url,
                create(run + "-std", Map.of(QueueAttributeName.VISIBILITY_TIMEOUT, "30")));
        checks.equal("GetQueueUrl finds the queue", url, sqs.getQueueUrl(b -> b.queueName(run + "-std")).queueUrl());
        checks.equal("the queue URL's host is the endpoint", true, url.startsWith(Main.env("SPOOLQ_URL")));

        String body = "{\"order\": 1, \"text\": \"naïve café ✓ \\r\\n\"}\r\n";
        SendMessageResponse sent = sqs.sendMessage(b -> b.queueUrl(url).messageBody(body)
                .messageAttributes(sampleAttributes()));  // the SDK checks MD5OfMessageBody and MD5OfMessageAttributes
        checks.check("SendMessage returns a MessageId", sent.messageId() != null && !sent.messageId().isEmpty());
        checks.check("SendMessage returns MD5OfMessageAttributes", sent.md5OfMessageAttributes() != null);

        List<Message> got = receive(url, 10, 1);  // MD5s of the received body and attributes checked by the SDK
        checks.equal("ReceiveMessage returns the one message", 1, got.size());
        if (got.isEmpty()) {
            return;
        }
        Message m = got.get(0);
        checks.equal("the body comes back byte for byte (CR, LF, non-ASCII)", body, m.body());
        checks.equal("the MessageId is the one SendMessage returned", sent.messageId(), m.messageId());
        checks.equal("every message attribute comes back", sampleAttributes(), m.messageAttributes());
        checks.equal("ApproximateReceiveCount is 1", "1", m.attributes().get(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT));
        checks.check("SentTimestamp is set", m.attributes().containsKey(MessageSystemAttributeName.SENT_TIMESTAMP));
        Map<QueueAttributeName, String> inFlight = attributes(url);
        checks.equal("the message is in flight", "1", inFlight.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE));
        checks.equal("and not visible", "0", inFlight.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
        checks.equal("a second receive finds nothing while it is in flight", 0, receive(url, 10, 0).size());
        sqs.deleteMessage(b -> b.queueUrl(url).receiptHandle(m.receiptHandle()));
        Map<QueueAttributeName, String> after = attributes(url);
        checks.equal("DeleteMessage removes it", "0", after.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE));
        checks.equal("the QueueArn names the queue", "arn:aws:sqs:us-east-1:123456789012:" + run + "-std",
                after.get(QueueAttributeName.QUEUE_ARN));
    }

    private void sizes() {
        int limit = 262_144;
        String url = create(run + "-sizes", Map.of(QueueAttributeName.MAXIMUM_MESSAGE_SIZE, "" + limit));
        String largest = "é".repeat(limit / 2);  // 2 bytes each in UTF-8: exactly the queue's limit
        sqs.sendMessage(b -> b.queueUrl(url).messageBody(largest));  // the SDK checks its MD5
        List<Message> got = receive(url, 1, 1);
        checks.equal("a body of exactly MaximumMessageSize bytes round-trips", largest, got.isEmpty() ? null : got.get(0).body());
        checks.expectThrows("a body one byte over MaximumMessageSize: SqsException", SqsException.class,
                () -> sqs.sendMessage(b -> b.queueUrl(url).messageBody(largest + "x")),
                e -> checks.equal("with code InvalidParameterValue", "InvalidParameterValue", e.awsErrorDetails().errorCode()));
        checks.equal("and nothing is queued", "0", attributes(url).get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
    }

    private void batches() {
        String url = create(run + "-batch", Map.of());
        List<SendMessageBatchRequestEntry> entries = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            SendMessageBatchRequestEntry.Builder e = SendMessageBatchRequestEntry.builder().id("e" + i).messageBody("batch " + i);
            if (i % 3 == 0) {
                e.messageAttributes(sampleAttributes());
            }
            entries.add(e.build());
        }
        SendMessageBatchResponse sent = sqs.sendMessageBatch(b -> b.queueUrl(url).entries(entries));
        checks.equal("SendMessageBatch: 10 successful", 10, sent.successful().size());
        checks.equal("SendMessageBatch: none failed", 0, sent.failed().size());

        Set<String> bodies = new HashSet<>();
        List<DeleteMessageBatchRequestEntry> deletes = new ArrayList<>();
        for (int round = 0; round < 10 && bodies.size() < 10; round++) {
            for (Message m : receive(url, 10, 1)) {
                bodies.add(m.body());
                deletes.add(DeleteMessageBatchRequestEntry.builder().id("d" + deletes.size()).receiptHandle(m.receiptHandle()).build());
            }
        }
        checks.equal("every batch message is received once", 10, bodies.size());
        DeleteMessageBatchResponse deleted = sqs.deleteMessageBatch(b -> b.queueUrl(url).entries(deletes));
        checks.equal("DeleteMessageBatch: all successful", deletes.size(), deleted.successful().size());

        List<SendMessageBatchRequestEntry> mixed = List.of(
                SendMessageBatchRequestEntry.builder().id("good").messageBody("fine").build(),
                SendMessageBatchRequestEntry.builder().id("bad").messageBody("bad \u0000 body").build());
        SendMessageBatchResponse partly = sqs.sendMessageBatch(b -> b.queueUrl(url).entries(mixed));
        checks.equal("a batch with one bad body: one successful", 1, partly.successful().size());
        checks.equal("and the bad entry in Failed", "bad", partly.failed().isEmpty() ? null : partly.failed().get(0).id());
        checks.equal("the failure is the sender's", true, !partly.failed().isEmpty() && partly.failed().get(0).senderFault());
    }

    private void visibility() {
        String url = create(run + "-vis", Map.of(QueueAttributeName.VISIBILITY_TIMEOUT, "60"));
        sqs.sendMessage(b -> b.queueUrl(url).messageBody("again"));
        Message first = receive(url, 1, 1).get(0);
        sqs.changeMessageVisibility(b -> b.queueUrl(url).receiptHandle(first.receiptHandle()).visibilityTimeout(0));
        List<Message> again = receive(url, 1, 1);
        checks.equal("ChangeMessageVisibility 0 makes it receivable at once", 1, again.size());
        if (again.isEmpty()) {
            return;
        }
        checks.equal("its receive count moved on", "2",
                again.get(0).attributes().get(MessageSystemAttributeName.APPROXIMATE_RECEIVE_COUNT));
        sqs.changeMessageVisibilityBatch(b -> b.queueUrl(url).entries(e -> e.id("v").receiptHandle(again.get(0).receiptHandle())
                .visibilityTimeout(1)));
        checks.equal("hidden for its new timeout", 0, receive(url, 1, 0).size());
        long start = System.nanoTime();
        List<Message> third = receive(url, 1, 5);
        double waited = (System.nanoTime() - start) / 1e9;
        checks.equal("it comes back when the timeout ends", 1, third.size());
        checks.check("within the long poll, about a second later", waited < 4.5, waited + " s");
        if (!third.isEmpty()) {
            sqs.deleteMessage(b -> b.queueUrl(url).receiptHandle(third.get(0).receiptHandle()));
        }
    }

    private void longPoll() throws Exception {
        String url = create(run + "-long", Map.of());
        long start = System.nanoTime();
        checks.equal("an empty long poll returns no message", 0, receive(url, 1, 1).size());
        double waited = (System.nanoTime() - start) / 1e9;
        checks.check("after waiting its WaitTimeSeconds", waited >= 0.9 && waited < 4, waited + " s");

        CompletableFuture<List<Message>> poll = CompletableFuture.supplyAsync(() -> receive(url, 1, 10));
        Thread.sleep(1000);
        long sentAt = System.nanoTime();
        sqs.sendMessage(b -> b.queueUrl(url).messageBody("wake up"));
        List<Message> got = poll.get();
        double woke = (System.nanoTime() - sentAt) / 1e9;
        checks.equal("a waiting long poll gets the message sent meanwhile", "wake up", got.isEmpty() ? null : got.get(0).body());
        checks.check("promptly, not at the end of its wait", woke < 3, woke + " s");
        if (!got.isEmpty()) {
            sqs.deleteMessage(b -> b.queueUrl(url).receiptHandle(got.get(0).receiptHandle()));
        }
    }

    private void fifo() {
        String url = create(run + "-orders.fifo", Map.of(QueueAttributeName.FIFO_QUEUE, "true",
                QueueAttributeName.CONTENT_BASED_DEDUPLICATION, "true", QueueAttributeName.VISIBILITY_TIMEOUT, "30"));
        List<String> sequence = new ArrayList<>();
        Map<String, String> sequenceOf = new HashMap<>();
        for (String group : List.of("g1", "g2")) {
            for (int i = 1; i <= 3; i++) {
                String body = group + "-" + i;
                SendMessageResponse r = sqs.sendMessage(b -> b.queueUrl(url).messageBody(body).messageGroupId(group));
                sequence.add(r.sequenceNumber());
                sequenceOf.put(body, r.sequenceNumber());
            }
        }
        checks.check("FIFO sends return sequence numbers", sequence.stream().allMatch(s -> s != null && !s.isEmpty()), sequence);
        checks.check("which increase", increasing(sequence), sequence);
        sqs.sendMessage(b -> b.queueUrl(url).messageBody("g1-1").messageGroupId("g1"));  // a duplicate by content
        checks.equal("a duplicate within the window is accepted and not queued", "6",
                attributes(url).get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));

        List<SendMessageBatchRequestEntry> batch = new ArrayList<>();
        for (int i = 4; i <= 6; i++) {
            batch.add(SendMessageBatchRequestEntry.builder().id("b" + i).messageBody("g1-" + i).messageGroupId("g1").build());
        }
        checks.equal("a FIFO batch is sent whole", 3, sqs.sendMessageBatch(b -> b.queueUrl(url).entries(batch)).successful().size());

        Map<String, List<String>> byGroup = new HashMap<>();
        List<Message> got = receive(url, 10, 1);
        List<String> wrongAttributes = new ArrayList<>();
        for (Message m : got) {
            byGroup.computeIfAbsent(m.attributes().get(MessageSystemAttributeName.MESSAGE_GROUP_ID), g -> new ArrayList<>()).add(m.body());
            String dedup = m.attributes().get(MessageSystemAttributeName.MESSAGE_DEDUPLICATION_ID);
            if (sequenceOf.containsKey(m.body()) && !sequenceOf.get(m.body()).equals(m.attributes().get(MessageSystemAttributeName.SEQUENCE_NUMBER))
                    || dedup == null || !dedup.equals(sha256Hex(m.body()))) {
                wrongAttributes.add(m.body() + " " + m.attributes());
            }
        }
        checks.check("a received FIFO message carries its send's SequenceNumber and its content-based MessageDeduplicationId",
                wrongAttributes.isEmpty(), wrongAttributes);
        checks.equal("group g1 comes in the order sent", List.of("g1-1", "g1-2", "g1-3", "g1-4", "g1-5", "g1-6").subList(0,
                byGroup.getOrDefault("g1", List.of()).size()), byGroup.getOrDefault("g1", List.of()));
        checks.equal("group g2 comes in the order sent", List.of("g2-1", "g2-2", "g2-3").subList(0,
                byGroup.getOrDefault("g2", List.of()).size()), byGroup.getOrDefault("g2", List.of()));
        checks.check("the first receive returns messages of both groups", byGroup.size() == 2, byGroup);
        checks.equal("while their messages are in flight the groups are blocked", 0, receive(url, 10, 0).size());

        Message head = got.get(0);
        sqs.changeMessageVisibility(b -> b.queueUrl(url).receiptHandle(head.receiptHandle()).visibilityTimeout(0));
        List<Message> redelivered = receive(url, 1, 1);
        checks.equal("a message made visible again is delivered before those after it", head.body(),
                redelivered.isEmpty() ? null : redelivered.get(0).body());
        List<DeleteMessageBatchRequestEntry> deletes = new ArrayList<>();
        for (Message m : got) {
            if (!m.messageId().equals(head.messageId())) {
                deletes.add(DeleteMessageBatchRequestEntry.builder().id("x" + deletes.size()).receiptHandle(m.receiptHandle()).build());
            }
        }
        for (Message m : redelivered) {
            deletes.add(DeleteMessageBatchRequestEntry.builder().id("x" + deletes.size()).receiptHandle(m.receiptHandle()).build());
        }
        checks.equal("deleting every delivered message succeeds", deletes.size(),
                sqs.deleteMessageBatch(b -> b.queueUrl(url).entries(deletes)).successful().size());
        int rest = 0;
        for (int round = 0; round < 10 && rest < 9 - got.size(); round++) {
            List<Message> more = receive(url, 10, 1);
            rest += more.size();
            for (Message m : more) {
                sqs.deleteMessage(b -> b.queueUrl(url).receiptHandle(m.receiptHandle()));
            }
        }
        checks.equal("the rest of the groups follow once the first messages are deleted", 9 - got.size(), rest);
    }

    /** The deduplication id content-based deduplication gives a body: the SHA-256 of its UTF-8 bytes, in hex. */
    static String sha256Hex(String body) {
        try {
            byte[] digest = java.security.MessageDigest.getInstance("SHA-256").digest(body.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return java.util.HexFormat.of().formatHex(digest);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static boolean increasing(List<String> numbers) {
        for (int i = 1; i < numbers.size(); i++) {
            if (new java.math.BigInteger(numbers.get(i)).compareTo(new java.math.BigInteger(numbers.get(i - 1))) <= 0) {
                return false;
            }
        }
        return true;
    }

    private void deadLetters() throws Exception {
        String dlq = create(run + "-dlq", Map.of());
        String dlqArn = attributes(dlq).get(QueueAttributeName.QUEUE_ARN);
        String work = create(run + "-work", Map.of(QueueAttributeName.REDRIVE_POLICY,
                "{\"deadLetterTargetArn\":\"" + dlqArn + "\",\"maxReceiveCount\":\"2\"}"));
        SendMessageResponse sent = sqs.sendMessage(b -> b.queueUrl(work).messageBody("poison"));
        for (int i = 0; i < 2; i++) {
            List<Message> got = sqs.receiveMessage(b -> b.queueUrl(work).visibilityTimeout(0).waitTimeSeconds(1)).messages();
            checks.equal("receive " + (i + 1) + " of 2 from the source queue", 1, got.size());
        }
        checks.equal("past maxReceiveCount the source queue has nothing", 0, receive(work, 10, 1).size());
        List<Message> dead = receive(dlq, 10, 2);
        checks.equal("the message is in the dead-letter queue", "poison", dead.isEmpty() ? null : dead.get(0).body());
        checks.equal("with its MessageId", sent.messageId(), dead.isEmpty() ? null : dead.get(0).messageId());
        checks.equal("ListDeadLetterSourceQueues names the source", List.of(work),
                sqs.listDeadLetterSourceQueues(b -> b.queueUrl(dlq)).queueUrls());
        if (!dead.isEmpty()) {
            sqs.changeMessageVisibility(b -> b.queueUrl(dlq).receiptHandle(dead.get(0).receiptHandle()).visibilityTimeout(0));
        }
        String handle = sqs.startMessageMoveTask(b -> b.sourceArn(dlqArn)).taskHandle();
        checks.check("StartMessageMoveTask returns a task handle", handle != null && !handle.isEmpty());
        String status = "";
        for (int i = 0; i < 100 && !"COMPLETED".equals(status); i++) {
            List<ListMessageMoveTasksResultEntry> tasks = sqs.listMessageMoveTasks(b -> b.sourceArn(dlqArn)).results();
            status = tasks.isEmpty() ? "" : tasks.get(0).status();
            Thread.sleep(100);
        }
        checks.equal("the move task completes", "COMPLETED", status);
        List<Message> back = receive(work, 10, 2);
        checks.equal("the message is back in its source queue", "poison", back.isEmpty() ? null : back.get(0).body());
        if (!back.isEmpty()) {
            sqs.deleteMessage(b -> b.queueUrl(work).receiptHandle(back.get(0).receiptHandle()));
        }
    }

    private void errors() {
        String url = create(run + "-errors", Map.of(QueueAttributeName.VISIBILITY_TIMEOUT, "30"));
        checks.expectThrows("GetQueueUrl of a missing queue: QueueDoesNotExistException", QueueDoesNotExistException.class,
                () -> sqs.getQueueUrl(b -> b.queueName(run + "-missing")),
                e -> checks.equal("with status 400", 400, e.statusCode()));
        checks.expectThrows("SendMessage to a missing queue: QueueDoesNotExistException", QueueDoesNotExistException.class,
                () -> sqs.sendMessage(b -> b.queueUrl(url + "-missing").messageBody("x")));
        checks.expectThrows("CreateQueue with other attributes: QueueNameExistsException", QueueNameExistsException.class,
                () -> create(run + "-errors", Map.of(QueueAttributeName.VISIBILITY_TIMEOUT, "31")));
        checks.expectThrows("a body with U+0000: InvalidMessageContentsException", InvalidMessageContentsException.class,
                () -> sqs.sendMessage(b -> b.queueUrl(url).messageBody("nul \u0000")));
        checks.expectThrows("an empty batch: EmptyBatchRequestException", EmptyBatchRequestException.class,
                () -> sqs.sendMessageBatch(b -> b.queueUrl(url).entries(List.of())));
        List<SendMessageBatchRequestEntry> eleven = new ArrayList<>();
        for (int i = 0; i < 11; i++) {
            eleven.add(SendMessageBatchRequestEntry.builder().id("e" + i).messageBody("m").build());
        }
        checks.expectThrows("11 entries: TooManyEntriesInBatchRequestException", TooManyEntriesInBatchRequestException.class,
                () -> sqs.sendMessageBatch(b -> b.queueUrl(url).entries(eleven)));
        checks.expectThrows("two entries with one id: BatchEntryIdsNotDistinctException", BatchEntryIdsNotDistinctException.class,
                () -> sqs.sendMessageBatch(b -> b.queueUrl(url).entries(
                        SendMessageBatchRequestEntry.builder().id("same").messageBody("a").build(),
                        SendMessageBatchRequestEntry.builder().id("same").messageBody("b").build())));
        checks.expectThrows("an entry id with a space: InvalidBatchEntryIdException", InvalidBatchEntryIdException.class,
                () -> sqs.sendMessageBatch(b -> b.queueUrl(url).entries(
                        SendMessageBatchRequestEntry.builder().id("bad id").messageBody("a").build())));
        checks.expectThrows("a made-up receipt handle: ReceiptHandleIsInvalidException", ReceiptHandleIsInvalidException.class,
                () -> sqs.deleteMessage(b -> b.queueUrl(url).receiptHandle("not-a-receipt-handle")));
        checks.expectThrows("an unknown attribute name: InvalidAttributeNameException", InvalidAttributeNameException.class,
                () -> sqs.getQueueAttributes(b -> b.queueUrl(url).attributeNamesWithStrings("NoSuchAttribute")));
        checks.expectThrows("MaxNumberOfMessages 11: a 400 SqsException", SqsException.class,
                () -> sqs.receiveMessage(b -> b.queueUrl(url).maxNumberOfMessages(11)),
                e -> checks.equal("whose code is InvalidParameterValue", "InvalidParameterValue", e.awsErrorDetails().errorCode()));

        sqs.sendMessage(b -> b.queueUrl(url).messageBody("in flight"));
        Message m = receive(url, 1, 1).get(0);
        sqs.changeMessageVisibility(b -> b.queueUrl(url).receiptHandle(m.receiptHandle()).visibilityTimeout(0));
        checks.expectThrows("visibility 0 on a message not in flight: MessageNotInflightException", MessageNotInflightException.class,
                () -> sqs.changeMessageVisibility(b -> b.queueUrl(url).receiptHandle(m.receiptHandle()).visibilityTimeout(0)));

        sqs.purgeQueue(b -> b.queueUrl(url));
        checks.expectThrows("a second PurgeQueue within 60 s: PurgeQueueInProgressException", PurgeQueueInProgressException.class,
                () -> sqs.purgeQueue(b -> b.queueUrl(url)));
    }

    private void lifecycle() throws Exception {
        String url = create(run + "-life", Map.of(QueueAttributeName.DELAY_SECONDS, "0"));
        sqs.tagQueue(b -> b.queueUrl(url).tags(Map.of("team", "payments", "env", "test")));
        checks.equal("ListQueueTags returns the tags", Map.of("team", "payments", "env", "test"),
                sqs.listQueueTags(b -> b.queueUrl(url)).tags());
        sqs.untagQueue(b -> b.queueUrl(url).tagKeys("env"));
        checks.equal("UntagQueue removes one", Map.of("team", "payments"), sqs.listQueueTags(b -> b.queueUrl(url)).tags());
        sqs.setQueueAttributes(b -> b.queueUrl(url).attributes(Map.of(QueueAttributeName.MESSAGE_RETENTION_PERIOD, "3600")));
        checks.equal("SetQueueAttributes changes the retention", "3600",
                attributes(url).get(QueueAttributeName.MESSAGE_RETENTION_PERIOD));
        checks.check("ListQueues with the run's prefix lists the queue",
                sqs.listQueues(b -> b.queueNamePrefix(run + "-life")).queueUrls().contains(url));
        List<String> pageQueues = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            pageQueues.add(create(run + "-page-" + i, Map.of()));
        }
        List<String> paged = new ArrayList<>();
        sqs.listQueuesPaginator(b -> b.queueNamePrefix(run + "-page-").maxResults(1)).queueUrls().forEach(paged::add);
        checks.equal("listQueuesPaginator with pages of one lists every queue once", pageQueues, paged);

        for (int i = 0; i < 5; i++) {
            sqs.sendMessage(b -> b.queueUrl(url).messageBody("to purge"));
        }
        sqs.sendMessage(b -> b.queueUrl(url).messageBody("delayed").delaySeconds(30));
        checks.equal("a delayed message is counted as delayed", "1",
                attributes(url).get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_DELAYED));
        sqs.purgeQueue(b -> b.queueUrl(url));
        Map<QueueAttributeName, String> purged = attributes(url);
        checks.equal("PurgeQueue empties it", "0", purged.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
        checks.equal("delayed messages too", "0", purged.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_DELAYED));
        sqs.deleteQueue(b -> b.queueUrl(url));
        checks.expectThrows("a deleted queue does not exist", QueueDoesNotExistException.class,
                () -> sqs.getQueueUrl(b -> b.queueName(run + "-life")));
    }

    /** Queues live per region: the same name signed for eu-west-1 is another queue, with the region in its URL. */
    void regions(SqsClient ireland) {
        String name = run + "-regional";
        String here = create(name, Map.of());
        String there = ireland.createQueue(b -> b.queueName(name)).queueUrl();
        checks.check("the same name in eu-west-1 is another queue, its URL naming the region",
                !there.equals(here) && there.contains("/eu-west-1/"), there);
        ireland.sendMessage(b -> b.queueUrl(there).messageBody("in Ireland"));
        checks.equal("a message sent there is not in the us-east-1 queue", "0",
                attributes(here).get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
        List<Message> got = ireland.receiveMessage(b -> b.queueUrl(there).waitTimeSeconds(1)).messages();
        checks.equal("it is received there", "in Ireland", got.isEmpty() ? null : got.get(0).body());
        checks.equal("the queue's ARN names the region", "arn:aws:sqs:eu-west-1:123456789012:" + name,
                ireland.getQueueAttributes(b -> b.queueUrl(there).attributeNames(QueueAttributeName.QUEUE_ARN))
                        .attributes().get(QueueAttributeName.QUEUE_ARN));
        checks.equal("ListQueues signed for eu-west-1 lists that region's queue only", List.of(there),
                ireland.listQueues(b -> b.queueNamePrefix(name)).queueUrls());
    }

    /** Credentials: a signature with the wrong secret, an unknown key, and an identity without the permission. */
    void credentials(SqsClient reader, SqsClient wrongSecret, SqsClient unknownKey) {
        String url = create(run + "-auth", Map.of());
        checks.expectThrows("a wrong secret: SqsException", SqsException.class,
                () -> wrongSecret.sendMessage(b -> b.queueUrl(url).messageBody("x")),
                e -> {
                    checks.equal("403", 403, e.statusCode());
                    checks.equal("code SignatureDoesNotMatch", "SignatureDoesNotMatch", e.awsErrorDetails().errorCode());
                });
        checks.expectThrows("an unknown access key: SqsException", SqsException.class,
                () -> unknownKey.listQueues(),
                e -> checks.equal("code InvalidClientTokenId", "InvalidClientTokenId", e.awsErrorDetails().errorCode()));
        checks.equal("an identity with get_status may read the queue's attributes", "0",
                reader.getQueueAttributes(b -> b.queueUrl(url).attributeNames(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES))
                        .attributes().get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
        checks.expectThrows("but not send: SqsException", SqsException.class,
                () -> reader.sendMessage(b -> b.queueUrl(url).messageBody("x")),
                e -> {
                    checks.equal("403", 403, e.statusCode());
                    checks.equal("code AccessDenied", "AccessDenied", e.awsErrorDetails().errorCode());
                });
        checks.equal("and the refused send changed nothing", "0",
                attributes(url).get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
    }
}
