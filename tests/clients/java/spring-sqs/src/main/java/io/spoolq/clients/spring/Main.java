package io.spoolq.clients.spring;

import io.awspring.cloud.sqs.annotation.SqsListener;
import io.awspring.cloud.sqs.listener.SqsHeaders;
import io.awspring.cloud.sqs.operations.SendResult;
import io.awspring.cloud.sqs.operations.SqsTemplate;
import io.spoolq.clients.Checks;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.stereotype.Component;
import software.amazon.awssdk.services.sqs.SqsAsyncClient;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * A Spring Boot application with Spring Cloud AWS's {@code @SqsListener}, as a Spring service consumes
 * SQS, against spoolq's SQS door: {@value #TOTAL} orders sent with {@code SqsTemplate} (batches of 10,
 * a JSON payload and a header), consumed by a listener whose every tenth order fails its first attempt.
 * With the default acknowledgement mode (on success) a processed order is deleted, and a failed one is
 * left to come back when its visibility timeout ends. Every order must be processed successfully
 * exactly once, each failed one retried once after its visibility ended, and the queue left empty.
 * A second listener consumes a FIFO queue of 5 groups of 20 steps, sent in batches that mix the
 * groups; step 5 of each group fails once, and each group must be processed once, in order, the
 * failed step retried before the steps after it (Spring Cloud AWS's FIFO handling).
 *
 * <p>Environment: {@code SPOOLQ_URL}, {@code SQS_ACCESS_KEY}/{@code SQS_SECRET_KEY}, {@code RUN_ID};
 * the Spring properties are passed as command-line arguments by {@link #main}.
 */
@SpringBootApplication
public class Main {
    static final int TOTAL = 1000;
    /** Longer than a batch's processing and acknowledgement take on a busy machine (else a processed
     * message comes back before its acknowledgement, which at-least-once delivery allows). */
    static final int VISIBILITY_SECONDS = 5;

    /** The payload: Spring Cloud AWS serializes it as JSON and names its type in a message attribute. */
    public record Order(int number, String item) {
    }

    /** The consumer, as an application writes it. */
    @Component
    public static class OrderListener {
        final Map<Integer, AtomicInteger> attempts = new ConcurrentHashMap<>();
        final Map<Integer, AtomicInteger> processed = new ConcurrentHashMap<>();
        final Map<Integer, Long> failedAt = new ConcurrentHashMap<>();
        final Map<Integer, Long> retriedAfterMillis = new ConcurrentHashMap<>();
        final AtomicInteger wrongHeaders = new AtomicInteger();

        @SqsListener(value = "${orders.queue}", maxConcurrentMessages = "20", maxMessagesPerPoll = "10",
                pollTimeoutSeconds = "1", messageVisibilitySeconds = "" + VISIBILITY_SECONDS)
        public void onOrder(Order order, @Header("tenant") String tenant,
                            @Header(name = SqsHeaders.MessageSystemAttributes.SQS_APPROXIMATE_FIRST_RECEIVE_TIMESTAMP,
                                    required = false) String firstReceived) {
            if (!"acme".equals(tenant) || !("item-" + order.number()).equals(order.item())) {
                wrongHeaders.incrementAndGet();
            }
            int attempt = attempts.computeIfAbsent(order.number(), n -> new AtomicInteger()).incrementAndGet();
            if (order.number() % 10 == 7 && attempt == 1) {
                failedAt.put(order.number(), firstReceived == null ? -1L : Long.parseLong(firstReceived));
                throw new IllegalStateException("order " + order.number() + " fails its first attempt (on purpose)");
            }
            Long received = failedAt.get(order.number());
            if (received != null) {  // the retry: its first receive's visibility timeout has ended
                retriedAfterMillis.putIfAbsent(order.number(), received < 0 ? -1L : System.currentTimeMillis() - received);
            }
            processed.computeIfAbsent(order.number(), n -> new AtomicInteger()).incrementAndGet();
        }
    }

    /** A FIFO consumer: each group's messages must be processed in the order sent. */
    @Component
    public static class GroupListener {
        static final int GROUPS = 5;
        static final int PER_GROUP = 20;
        final Map<String, List<Integer>> processed = new ConcurrentHashMap<>();
        final Map<String, AtomicInteger> attemptsOfFifth = new ConcurrentHashMap<>();

        /** Every delivery of each group, in the order the listener saw them: step, receive count, first receive (ms). */
        final Map<String, List<String>> deliveries = new ConcurrentHashMap<>();

        @SqsListener(value = "${groups.queue}", maxMessagesPerPoll = "10", pollTimeoutSeconds = "1",
                messageVisibilitySeconds = "" + VISIBILITY_SECONDS)
        public void onStep(String body, @Header(SqsHeaders.MessageSystemAttributes.SQS_MESSAGE_GROUP_ID_HEADER) String group,
                           @Header(name = SqsHeaders.MessageSystemAttributes.SQS_APPROXIMATE_RECEIVE_COUNT, required = false)
                           String receiveCount,
                           @Header(name = SqsHeaders.MessageSystemAttributes.SQS_APPROXIMATE_FIRST_RECEIVE_TIMESTAMP,
                                   required = false) String firstReceived) {
            int step = Integer.parseInt(body.substring(body.indexOf(':') + 1));
            deliveries.computeIfAbsent(group, g -> java.util.Collections.synchronizedList(new ArrayList<>()))
                    .add(step + "@rc" + receiveCount + "@" + firstReceived + "@t" + System.currentTimeMillis());
            if (step == 5 && attemptsOfFifth.computeIfAbsent(group, g -> new AtomicInteger()).incrementAndGet() == 1) {
                throw new IllegalStateException("step 5 of " + group + " fails its first attempt (on purpose)");
            }
            processed.computeIfAbsent(group, g -> java.util.Collections.synchronizedList(new ArrayList<>())).add(step);
        }
    }

    public static void main(String[] args) throws Exception {
        String queue = Main.env("RUN_ID") + "-orders";
        String[] properties = {
            "--spring.main.banner-mode=off",
            "--spring.main.web-application-type=none",
            "--logging.level.root=WARN",
            // the listener's failures on purpose are logged at ERROR with a stack trace each
            "--logging.level.io.awspring.cloud.sqs=OFF",
            "--spring.cloud.aws.sqs.endpoint=" + env("SPOOLQ_URL"),
            "--spring.cloud.aws.region.static=us-east-1",
            "--spring.cloud.aws.credentials.access-key=" + env("SQS_ACCESS_KEY"),
            "--spring.cloud.aws.credentials.secret-key=" + env("SQS_SECRET_KEY"),
            "--orders.queue=" + queue,
            "--groups.queue=" + queue + "-groups.fifo",
        };
        Checks checks = new Checks();
        // The queue exists before the listener starts (its visibility timeout as the listener's)
        try (SqsAsyncClient setup = SqsAsyncClient.builder()
                .endpointOverride(java.net.URI.create(env("SPOOLQ_URL")))
                .region(software.amazon.awssdk.regions.Region.US_EAST_1)
                .credentialsProvider(software.amazon.awssdk.auth.credentials.StaticCredentialsProvider.create(
                        software.amazon.awssdk.auth.credentials.AwsBasicCredentials.create(env("SQS_ACCESS_KEY"), env("SQS_SECRET_KEY"))))
                .build()) {
            setup.createQueue(b -> b.queueName(queue).attributes(Map.of(QueueAttributeName.VISIBILITY_TIMEOUT, "" + VISIBILITY_SECONDS))).join();
            setup.createQueue(b -> b.queueName(queue + "-groups.fifo").attributes(Map.of(QueueAttributeName.FIFO_QUEUE, "true",
                    QueueAttributeName.VISIBILITY_TIMEOUT, "" + VISIBILITY_SECONDS))).join();
        }
        ConfigurableApplicationContext context = SpringApplication.run(Main.class, properties);
        try {
            checks.step("standard queue", () -> run(checks, context, queue));
            checks.step("fifo queue", () -> runGroups(checks, context, queue + "-groups.fifo"));
        } finally {
            context.close();
        }
        checks.finish();
    }

    static void run(Checks checks, ConfigurableApplicationContext context, String queue) throws Exception {
        SqsTemplate template = context.getBean(SqsTemplate.class);
        OrderListener listener = context.getBean(OrderListener.class);
        SqsAsyncClient sqs = context.getBean(SqsAsyncClient.class);

        int sent = 0;
        for (int start = 0; start < TOTAL; start += 10) {
            List<Message<Order>> batch = new ArrayList<>();
            for (int n = start; n < start + 10; n++) {
                batch.add(MessageBuilder.withPayload(new Order(n, "item-" + n)).setHeader("tenant", "acme").build());
            }
            SendResult.Batch<Order> result = template.sendMany(queue, batch);
            sent += result.successful().size();
        }
        checks.equal("SqsTemplate sent " + TOTAL + " orders in batches of 10", TOTAL, sent);

        long deadline = System.nanoTime() + 120_000_000_000L;
        while (listener.processed.size() < TOTAL && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        // Longer than a visibility timeout: a message delivered twice would show up now
        Thread.sleep((VISIBILITY_SECONDS + 2) * 1000L);
        checks.equal("@SqsListener processed every order", TOTAL, listener.processed.size());
        List<Integer> twice = listener.processed.entrySet().stream().filter(e -> e.getValue().get() != 1)
                .map(Map.Entry::getKey).sorted().toList();
        checks.check("each exactly once", twice.isEmpty(), "processed more than once: " + twice);
        long failing = listener.attempts.keySet().stream().filter(n -> n % 10 == 7).count();
        checks.equal("every tenth order failed its first attempt", (long) TOTAL / 10, (long) listener.failedAt.size());
        List<Integer> notRetriedOnce = listener.attempts.entrySet().stream()
                .filter(e -> e.getKey() % 10 == 7 && e.getValue().get() != 2).map(Map.Entry::getKey).sorted().toList();
        checks.check("and was retried exactly once", failing == TOTAL / 10 && notRetriedOnce.isEmpty(),
                "not attempted twice: " + notRetriedOnce);
        // from the failed delivery's receive (its ApproximateFirstReceiveTimestamp, on this machine's clock)
        List<Long> early = listener.retriedAfterMillis.values().stream().filter(ms -> ms < VISIBILITY_SECONDS * 1000L - 20).toList();
        checks.check("the retry came when the visibility timeout ended, not before", listener.retriedAfterMillis.size() == TOTAL / 10
                && early.isEmpty(), "retried after (ms from the receive): " + early + ", retries " + listener.retriedAfterMillis.size());
        List<Integer> once = listener.attempts.entrySet().stream()
                .filter(e -> e.getKey() % 10 != 7 && e.getValue().get() != 1).map(Map.Entry::getKey).sorted().toList();
        checks.check("orders that succeeded at once were delivered once", once.isEmpty(), "delivered again: " + once);
        checks.equal("the JSON payload and the header arrived with every order", 0, listener.wrongHeaders.get());

        String url = sqs.getQueueUrl(b -> b.queueName(queue)).join().queueUrl();
        Map<QueueAttributeName, String> left = Map.of();
        for (int i = 0; i < 50; i++) {  // acknowledgements are sent in batches, within a second
            left = sqs.getQueueAttributes(b -> b.queueUrl(url).attributeNames(QueueAttributeName.ALL)).join().attributes();
            if ("0".equals(left.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE))
                    && "0".equals(left.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES))) {
                break;
            }
            Thread.sleep(200);
        }
        checks.equal("the acknowledgements deleted every order: none visible", "0", left.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES));
        checks.equal("none in flight", "0", left.get(QueueAttributeName.APPROXIMATE_NUMBER_OF_MESSAGES_NOT_VISIBLE));
    }

    static void runGroups(Checks checks, ConfigurableApplicationContext context, String queue) throws Exception {
        SqsTemplate template = context.getBean(SqsTemplate.class);
        GroupListener listener = context.getBean(GroupListener.class);
        int total = GroupListener.GROUPS * GroupListener.PER_GROUP;
        int sent = 0;
        for (int step = 0; step < GroupListener.PER_GROUP; step += 2) {  // batches that mix the groups
            List<Message<String>> batch = new ArrayList<>();
            for (int g = 0; g < GroupListener.GROUPS; g++) {
                for (int k = step; k < step + 2; k++) {
                    batch.add(MessageBuilder.withPayload("group-" + g + ":" + k)
                            .setHeader(SqsHeaders.MessageSystemAttributes.SQS_MESSAGE_GROUP_ID_HEADER, "group-" + g)
                            .setHeader(SqsHeaders.MessageSystemAttributes.SQS_MESSAGE_DEDUPLICATION_ID_HEADER, "g" + g + "-" + k)
                            .build());
                }
            }
            sent += template.sendMany(queue, batch).successful().size();
        }
        checks.equal("fifo: SqsTemplate sent " + total + " messages in " + GroupListener.GROUPS + " groups", total, sent);
        long deadline = System.nanoTime() + 90_000_000_000L;
        while (listener.processed.values().stream().mapToInt(List::size).sum() < total && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        Thread.sleep((VISIBILITY_SECONDS + 2) * 1000L);
        List<Integer> inOrder = new ArrayList<>();
        for (int k = 0; k < GroupListener.PER_GROUP; k++) {
            inOrder.add(k);
        }
        for (int g = 0; g < GroupListener.GROUPS; g++) {
            String group = "group-" + g;
            List<Integer> processed = new ArrayList<>(listener.processed.getOrDefault(group, List.of()));
            checks.check("fifo: " + group + " processed once each, in the order sent, step 5 retried before step 6",
                    inOrder.equals(processed), "processed " + processed + "; deliveries " + listener.deliveries.get(group));
        }
        checks.check("fifo: step 5 of each group failed once and was retried once",
                listener.attemptsOfFifth.size() == GroupListener.GROUPS
                        && listener.attemptsOfFifth.values().stream().allMatch(n -> n.get() == 2), listener.attemptsOfFifth);
    }

    static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException("missing environment variable " + name);
        }
        return value;
    }
}
