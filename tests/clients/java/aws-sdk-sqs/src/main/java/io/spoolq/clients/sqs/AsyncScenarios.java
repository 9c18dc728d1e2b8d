package io.spoolq.clients.sqs;

import io.spoolq.clients.Checks;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import software.amazon.awssdk.services.sqs.SqsAsyncClient;
import software.amazon.awssdk.services.sqs.batchmanager.SqsAsyncBatchManager;
import software.amazon.awssdk.services.sqs.model.DeleteMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageSystemAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;
import software.amazon.awssdk.services.sqs.model.QueueDoesNotExistException;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchRequestEntry;
import software.amazon.awssdk.services.sqs.model.SendMessageBatchResponse;
import software.amazon.awssdk.services.sqs.model.SendMessageResponse;

/**
 * The {@code SqsAsyncClient} scenarios, under concurrent load: many batch sends in flight at once,
 * consumers receiving and deleting concurrently (every message exactly once, none left), concurrent
 * long polls woken by sends, FIFO order through the async client, and a modelled error.
 */
final class AsyncScenarios {
    private static final int PRODUCERS = 20;  // concurrent SendMessageBatch calls of 10 messages each
    private static final int CONSUMERS = 4;

    private final Checks checks;
    private final SqsAsyncClient sqs;
    private final String run;

    AsyncScenarios(Checks checks, SqsAsyncClient sqs, String run) {
        this.checks = checks;
        this.sqs = sqs;
        this.run = run;
    }

    void runAll() {
        checks.step("async: concurrent producers and consumers", this::concurrentLoad);
        checks.step("async: concurrent long polls", this::concurrentLongPolls);
        checks.step("async: fifo", this::fifo);
        checks.step("async: automatic batching (SqsAsyncBatchManager)", this::batchManager);
        checks.step("async: modelled error", this::error);
    }

    private String create(String name, Map<QueueAttributeName, String> attributes) {
        return sqs.createQueue(b -> b.queueName(name).attributes(attributes)).join().queueUrl();
    }

    private CompletableFuture<List<Message>> receive(String url, int max, int wait) {
        return sqs.receiveMessage(ReceiveMessageRequest.builder().queueUrl(url).maxNumberOfMessages(max).waitTimeSeconds(wait)
                .messageAttributeNames("All").messageSystemAttributeNames(MessageSystemAttributeName.ALL).build())
                .thenApply(r -> r.messages());
    }

    private void concurrentLoad() throws Exception {
        String url = create(run + "-async-load", Map.of(QueueAttributeName.VISIBILITY_TIMEOUT, "60"));
        int total = PRODUCERS * 10;
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        AtomicInteger deleted = new AtomicInteger();
        AtomicInteger failedSends = new AtomicInteger();
        List<CompletableFuture<?>> work = new ArrayList<>();
        for (int p = 0; p < PRODUCERS; p++) {
            List<SendMessageBatchRequestEntry> entries = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                SendMessageBatchRequestEntry.Builder e = SendMessageBatchRequestEntry.builder().id("m" + i).messageBody("load " + p + "-" + i);
                if (i == 0) {
                    e.messageAttributes(SyncScenarios.sampleAttributes());
                }
                entries.add(e.build());
            }
            work.add(sqs.sendMessageBatch(b -> b.queueUrl(url).entries(entries))
                    .thenAccept((SendMessageBatchResponse r) -> failedSends.addAndGet(r.failed().size())));
        }
        long deadline = System.nanoTime() + 60_000_000_000L;
        for (int c = 0; c < CONSUMERS; c++) {
            work.add(CompletableFuture.runAsync(() -> {
                while (deleted.get() < total && System.nanoTime() < deadline) {
                    List<Message> got = receive(url, 10, 1).join();
                    if (got.isEmpty()) {
                        continue;
                    }
                    List<DeleteMessageBatchRequestEntry> deletes = new ArrayList<>();
                    for (Message m : got) {
                        seen.computeIfAbsent(m.body(), k -> new AtomicInteger()).incrementAndGet();
                        deletes.add(DeleteMessageBatchRequestEntry.builder().id("d" + deletes.size()).receiptHandle(m.receiptHandle()).build());
                    }
                    deleted.addAndGet(sqs.deleteMessageBatch(b -> b.queueUrl(url).entries(deletes)).join().successful().size());
                }
            }));
        }
        CompletableFuture.allOf(work.toArray(new CompletableFuture[0])).join();
        checks.equal("async: " + total + " messages sent in " + PRODUCERS + " concurrent batches, none failed", 0, failedSends.get());
        checks.equal("async: " + CONSUMERS + " concurrent consumers received every message", total, seen.size());
        checks.check("async: each exactly once", seen.values().stream().allMatch(n -> n.get() == 1),
                seen.entrySet().stream().filter(e -> e.getValue().get() != 1).map(Map.Entry::getKey).toList());
        checks.equal("async: every delete succeeded", total, deleted.get());
        Map<QueueAttributeName, String> left = sqs.getQueueAttributes(b -> b.queueUrl(url).attributeNames(QueueAttributeName.ALL))
                .join().attributes();
        checks.equal("async: nothing left visible", "0", left.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
        checks.equal("async: nothing left in flight", "0", left.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE));
    }

    private void concurrentLongPolls() throws Exception {
        String url = create(run + "-async-long", Map.of());
        int polls = 6;
        List<CompletableFuture<List<Message>>> waiting = new ArrayList<>();
        for (int i = 0; i < polls; i++) {
            waiting.add(receive(url, 1, 10));
        }
        Thread.sleep(1000);
        long sentAt = System.nanoTime();
        List<CompletableFuture<?>> sends = new ArrayList<>();
        for (int i = 0; i < polls; i++) {
            String body = "wake " + i;
            sends.add(sqs.sendMessage(b -> b.queueUrl(url).messageBody(body)));
        }
        CompletableFuture.allOf(sends.toArray(new CompletableFuture[0])).join();
        List<String> bodies = new ArrayList<>();
        for (CompletableFuture<List<Message>> w : waiting) {
            for (Message m : w.join()) {
                bodies.add(m.body());
            }
        }
        double woke = (System.nanoTime() - sentAt) / 1e9;
        long distinct = bodies.stream().distinct().count();
        checks.equal("async: " + polls + " waiting long polls share the sent messages, none twice", (long) bodies.size(), distinct);
        checks.check("async: and they are woken before their 10 s end", woke < 8, woke + " s");
        int rest = 0;
        for (int round = 0; round < 5 && bodies.size() + rest < polls; round++) {
            rest += receive(url, 10, 1).join().size();
        }
        checks.equal("async: every sent message was received once", polls, bodies.size() + rest);
    }

    private void fifo() {
        String url = create(run + "-async.fifo", Map.of(QueueAttributeName.FIFO_QUEUE, "true"));
        for (int batch = 0; batch < 3; batch++) {
            List<SendMessageBatchRequestEntry> entries = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                int n = batch * 10 + i;
                entries.add(SendMessageBatchRequestEntry.builder().id("f" + i).messageBody("n" + n).messageGroupId("one")
                        .messageDeduplicationId("dedup-" + n).build());
            }
            sqs.sendMessageBatch(b -> b.queueUrl(url).entries(entries)).join();
        }
        List<String> order = new ArrayList<>();
        for (int round = 0; round < 10 && order.size() < 30; round++) {
            List<Message> got = receive(url, 10, 1).join();
            List<DeleteMessageBatchRequestEntry> deletes = new ArrayList<>();
            for (Message m : got) {
                order.add(m.body());
                deletes.add(DeleteMessageBatchRequestEntry.builder().id("d" + deletes.size()).receiptHandle(m.receiptHandle()).build());
            }
            if (!deletes.isEmpty()) {
                sqs.deleteMessageBatch(b -> b.queueUrl(url).entries(deletes)).join();
            }
        }
        List<String> expected = new ArrayList<>();
        for (int n = 0; n < 30; n++) {
            expected.add("n" + n);
        }
        checks.equal("async: one FIFO group of 30 arrives whole and in order", expected, order);
    }

    /**
     * The SDK's automatic batching: single sends, receives and deletes that the batch manager
     * gathers into SendMessageBatch, buffered ReceiveMessage calls and DeleteMessageBatch.
     */
    private void batchManager() {
        String url = create(run + "-batching", Map.of(QueueAttributeName.VISIBILITY_TIMEOUT, "30"));
        int total = 100;
        try (SqsAsyncBatchManager batching = sqs.batchManager()) {
            List<CompletableFuture<SendMessageResponse>> sends = new ArrayList<>();
            for (int i = 0; i < total; i++) {
                String body = "batched " + i;
                sends.add(batching.sendMessage(b -> b.queueUrl(url).messageBody(body)));
            }
            long sent = sends.stream().map(CompletableFuture::join).filter(r -> r.messageId() != null).count();
            checks.equal("batch manager: " + total + " single sends gathered into batches all succeed", (long) total, sent);
            Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
            List<CompletableFuture<?>> deletes = new ArrayList<>();
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (seen.size() < total && System.nanoTime() < deadline) {
                for (Message m : batching.receiveMessage(b -> b.queueUrl(url).maxNumberOfMessages(10).waitTimeSeconds(1)).join().messages()) {
                    seen.computeIfAbsent(m.body(), k -> new AtomicInteger()).incrementAndGet();
                    deletes.add(batching.deleteMessage(b -> b.queueUrl(url).receiptHandle(m.receiptHandle())));
                }
            }
            CompletableFuture.allOf(deletes.toArray(new CompletableFuture[0])).join();
            checks.equal("batch manager: buffered receives get every message", total, seen.size());
            checks.check("batch manager: each once", seen.values().stream().allMatch(n -> n.get() == 1), seen);
        }
        Map<QueueAttributeName, String> left = sqs.getQueueAttributes(b -> b.queueUrl(url).attributeNames(QueueAttributeName.ALL))
                .join().attributes();
        checks.equal("batch manager: the gathered deletes leave nothing in flight", "0",
                left.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE));
        checks.equal("batch manager: nor visible", "0", left.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
    }

    private void error() {
        checks.expectThrows("async: a missing queue fails the future with QueueDoesNotExistException",
                QueueDoesNotExistException.class, () -> sqs.getQueueUrl(b -> b.queueName(run + "-nope")).join());
    }
}
