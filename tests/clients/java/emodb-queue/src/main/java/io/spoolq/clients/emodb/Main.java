package io.spoolq.clients.emodb;

import com.bazaarvoice.emodb.common.api.UnauthorizedException;
import com.bazaarvoice.emodb.queue.api.BaseQueueService;
import com.bazaarvoice.emodb.queue.api.Message;
import com.bazaarvoice.emodb.queue.api.MoveQueueStatus;
import com.bazaarvoice.emodb.queue.api.UnknownMoveException;
import io.spoolq.clients.Checks;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * EmoDB's own Java queue clients against spoolq's {@code /queue/1} and {@code /dedupq/1}, built as
 * EmoDB's {@code QueueJerseyTest} builds them ({@link EmoClients}): every QueueService method with the
 * answers EmoDB documents, its errors as the client maps them, and concurrent pollers. With
 * {@code API_KEY} set the server has identities (and {@code READER_KEY}, {@code NOBODY_KEY} are refused
 * what they may not do); with {@code API_KEY} empty the server is open, and the client, which always
 * sends a key, sends one the server does not know.
 *
 * <p>Environment: {@code SPOOLQ_URL}, {@code RUN_ID}, {@code API_KEY}, {@code READER_KEY}, {@code NOBODY_KEY}.
 */
public final class Main {
    private final Checks checks = new Checks();
    private final String url = env("SPOOLQ_URL", false);
    private final String run = env("RUN_ID", false);
    private final String apiKey = env("API_KEY", true);
    /** The key the client sends to an open server: any will do there (EmoDB's client refuses an empty one). */
    static final String OPEN_SERVER_KEY = "any-key";

    public static void main(String[] args) {
        Main main = new Main();
        main.service("queue", "/queue/1");
        main.service("dedupq", "/dedupq/1");
        main.checks.finish();
    }

    static String env(String name, boolean mayBeEmpty) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            if (mayBeEmpty) {
                return null;
            }
            throw new IllegalStateException("missing environment variable " + name);
        }
        return value;
    }

    private void service(String name, String path) {
        EmoClients clients = new EmoClients(URI.create(url + path), name.equals("dedupq"));
        BaseQueueService client = clients.using(apiKey == null ? OPEN_SERVER_KEY : apiKey);
        Scenarios s = new Scenarios(checks, client, name + ": ", run + "-" + name, name.equals("dedupq"));
        checks.step(name + " send, peek, poll, renew, acknowledge", s::messageCycle);
        checks.step(name + " sendAll, sendBatch, move, purge", s::batchesAndMoves);
        checks.step(name + " claim expiry", s::claimExpiry);
        checks.step(name + " errors", s::errors);
        if (name.equals("dedupq")) {
            checks.step(name + " duplicates", s::duplicates);
        }
        checks.step(name + " concurrent pollers", s::concurrentPollers);
        if (apiKey != null) {
            checks.step(name + " API keys", () -> s.keys(clients, env("READER_KEY", false), env("NOBODY_KEY", false)));
        }
        clients.close();
    }

    /** The scenarios of one service (queue or dedupq). */
    static final class Scenarios {
        private final Checks checks;
        private final BaseQueueService client;
        private final String label;
        private final String prefix;
        private final boolean dedup;

        Scenarios(Checks checks, BaseQueueService client, String label, String prefix, boolean dedup) {
            this.checks = checks;
            this.client = client;
            this.label = label;
            this.prefix = prefix;
            this.dedup = dedup;
        }

        private void equal(String what, Object expected, Object actual) {
            checks.equal(label + what, expected, actual);
        }

        private void check(String what, boolean ok, Object detail) {
            checks.check(label + what, ok, detail);
        }

        private static List<String> ids(List<Message> messages) {
            return messages.stream().map(Message::getId).toList();
        }

        void messageCycle() {
            String q = prefix + "-cycle";
            Map<String, Object> order = new LinkedHashMap<>();
            order.put("order", 1);
            order.put("text", "naïve café ✓");
            order.put("lines", List.of(Map.of("sku", "a", "qty", 2)));
            client.send(q, order);
            client.send(q, "a plain string");
            client.send(q, 1234);
            equal("getMessageCount counts the three sends", 3L, client.getMessageCount(q));
            equal("getMessageCountUpTo with a limit above the count is exact", 3L, client.getMessageCountUpTo(q, 100));
            check("getMessageCountUpTo with a limit below the count says at least the limit",
                    client.getMessageCountUpTo(q, 2) >= 2, client.getMessageCountUpTo(q, 2));

            List<Message> peeked = client.peek(q, 10);
            equal("peek returns every payload as sent, oldest first", List.of(order, "a plain string", 1234),
                    peeked.stream().map(Message::getPayload).toList());
            equal("peek claims nothing", 0L, client.getClaimCount(q));

            List<Message> first = client.poll(q, Duration.ofSeconds(30), 2);
            equal("poll with limit 2 claims two messages", 2, first.size());
            if (dedup) {  // a dedup queue answers a poll batch in byte order of the payloads, as EmoDB's sorted queue does
                equal("the oldest two", Set.of(order, "a plain string"), new HashSet<>(first.stream().map(Message::getPayload).toList()));
                equal("peek and poll name a message by the same id", new HashSet<>(ids(peeked).subList(0, 2)), new HashSet<>(ids(first)));
            } else {
                equal("the oldest two, oldest first", List.of(order, "a plain string"), first.stream().map(Message::getPayload).toList());
                equal("peek and poll name a message by the same id", ids(peeked).subList(0, 2), ids(first));
            }
            equal("getClaimCount counts them", 2L, client.getClaimCount(q));
            equal("getMessageCount still counts claimed messages", 3L, client.getMessageCount(q));
            List<Message> second = client.poll(q, Duration.ofSeconds(30), 10);
            equal("a second poll gets only the unclaimed one", List.of(1234), second.stream().map(Message::getPayload).toList());
            equal("nothing is left to poll", 0, client.poll(q, Duration.ofSeconds(30), 10).size());

            client.renew(q, ids(first), Duration.ofSeconds(60));
            equal("renew keeps the claims", 3L, client.getClaimCount(q));
            checks.expectThrows(label + "renew of a made-up id: IllegalArgumentException, as EmoDB checks an id's checksum",
                    IllegalArgumentException.class,
                    () -> client.renew(q, List.of("0123456789abcdef0123456789abcdef01234567"), Duration.ofSeconds(60)),
                    e -> equal("in EmoDB's words", "Invalid event ID checksum.", e.getMessage()));
            client.acknowledge(q, List.of(first.get(0).getId()));
            equal("acknowledge removes the message", 2L, client.getMessageCount(q));
            equal("and its claim", 2L, client.getClaimCount(q));
            client.acknowledge(q, List.of(first.get(0).getId()));
            equal("acknowledging it again changes nothing", 2L, client.getMessageCount(q));

            client.unclaimAll(q);
            equal("unclaimAll releases every claim", 0L, client.getClaimCount(q));
            List<Message> again = client.poll(q, Duration.ofSeconds(30), 10);
            equal("the released messages can be polled again", Set.of(first.get(1).getId(), second.get(0).getId()), new HashSet<>(ids(again)));
            client.acknowledge(q, ids(again));
            equal("acknowledging the rest empties the queue", 0L, client.getMessageCount(q));
            equal("with no claims left", 0L, client.getClaimCount(q));
        }

        void batchesAndMoves() throws Exception {
            String q = prefix + "-batch";
            String other = prefix + "-other";
            String dest = prefix + "-moved";
            List<Object> ten = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                ten.add(Map.of("n", i));
            }
            client.sendAll(q, ten);
            equal("sendAll sends each message of the list", 10L, client.getMessageCount(q));
            Map<String, List<Object>> byQueue = new LinkedHashMap<>();
            byQueue.put(q, List.of("x", "y"));
            byQueue.put(other, List.of("p", "q", "r"));
            client.sendAll(byQueue);  // POST /_sendbatch
            equal("sendAll by queue (_sendbatch) sends to the first queue", 12L, client.getMessageCount(q));
            equal("and to the second", 3L, client.getMessageCount(other));
            client.poll(q, Duration.ofSeconds(30), 3);

            String reference = client.moveAsync(q, dest);
            check("moveAsync returns a reference", reference != null && !reference.isEmpty(), reference);
            MoveQueueStatus status = client.getMoveStatus(reference);
            for (int i = 0; i < 100 && status.getStatus() == MoveQueueStatus.Status.IN_PROGRESS; i++) {
                Thread.sleep(100);
                status = client.getMoveStatus(reference);
            }
            equal("getMoveStatus reports the move COMPLETE", MoveQueueStatus.Status.COMPLETE, status.getStatus());
            equal("from its source", q, status.getFrom());
            equal("to its destination", dest, status.getTo());
            equal("the move takes every message, claimed ones too", 12L, client.getMessageCount(dest));
            equal("and leaves the source empty", 0L, client.getMessageCount(q));
            List<Message> moved = client.peek(dest, 20);
            check("the moved payloads are the sent ones", moved.stream().map(Message::getPayload).toList().containsAll(List.of("x", "y", Map.of("n", 0))),
                    moved);
            client.purge(dest);
            equal("purge empties the destination", 0L, client.getMessageCount(dest));
            client.purge(other);
            equal("and the other queue", 0L, client.getMessageCount(other));
        }

        void claimExpiry() throws Exception {
            String q = prefix + "-expiry";
            client.send(q, "short claim");
            List<Message> got = client.poll(q, Duration.ofSeconds(1), 1);
            equal("poll with a 1 s claim gets the message", 1, got.size());
            long start = System.nanoTime();
            List<Message> back = List.of();
            while (back.isEmpty() && System.nanoTime() - start < 6_000_000_000L) {
                Thread.sleep(200);
                back = client.poll(q, Duration.ofSeconds(30), 1);
            }
            double after = (System.nanoTime() - start) / 1e9;
            equal("after its claim expires the message is polled again", ids(got), ids(back));
            check("not before the claim's second", after >= 0.8, after + " s");
            client.acknowledge(q, ids(back));
        }

        void errors() {
            String q = prefix + "-errors";
            // A client quirk: the server answers 404 with X-BV-Exception naming UnknownMoveException and the
            // exception as EmoDB's server writes it ({"id", "message", "suppressed"}), but the 6.4.9 client reads
            // that body with a JSON mapper that refuses the "message" field, so it throws a RuntimeException
            // wrapping Jackson's UnrecognizedPropertyException instead of UnknownMoveException.
            checks.expectThrows(label + "getMoveStatus of an unknown reference: the client recognizes UnknownMoveException's answer "
                            + "but cannot read its body (a client quirk)", RuntimeException.class,
                    () -> client.getMoveStatus("no-such-move"),
                    e -> check("naming UnknownMoveException and the field it refuses",
                            !(e instanceof UnknownMoveException) && String.valueOf(e.getMessage()).contains("UnknownMoveException")
                                    && String.valueOf(e.getMessage()).contains("\"message\""), e));
            checks.expectThrows(label + "poll with limit 0: IllegalArgumentException", IllegalArgumentException.class,
                    () -> client.poll(q, Duration.ofSeconds(30), 0));
            checks.expectThrows(label + "moveAsync of a queue to itself: IllegalArgumentException", IllegalArgumentException.class,
                    () -> client.moveAsync(q, q));
            checks.expectThrows(label + "a queue name EmoDB refuses: IllegalArgumentException", IllegalArgumentException.class,
                    () -> client.send("Upper Case!", "x"));
            equal("a refused call sends nothing", 0L, client.getMessageCount(q));
        }

        void duplicates() {
            String q = prefix + "-dups";
            client.send(q, Map.of("same", true));
            client.send(q, Map.of("same", true));
            equal("identical pending payloads collapse into one", 1L, client.getMessageCount(q));
            List<Message> claimed = client.poll(q, Duration.ofSeconds(30), 10);
            equal("one is polled", 1, claimed.size());
            client.send(q, Map.of("same", true));
            equal("once it is claimed, the same payload is queued again", 2L, client.getMessageCount(q));
            client.purge(q);
        }

        void concurrentPollers() throws Exception {
            String q = prefix + "-load";
            int total = 400;
            for (int start = 0; start < total; start += 50) {
                List<Object> batch = new ArrayList<>();
                for (int i = start; i < start + 50; i++) {
                    batch.add(Map.of("n", i));
                }
                client.sendAll(q, batch);
            }
            Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
            AtomicInteger acked = new AtomicInteger();
            List<CompletableFuture<?>> pollers = new ArrayList<>();
            long deadline = System.nanoTime() + 60_000_000_000L;
            for (int w = 0; w < 4; w++) {
                pollers.add(CompletableFuture.runAsync(() -> {
                    while (acked.get() < total && System.nanoTime() < deadline) {
                        List<Message> got = client.poll(q, Duration.ofSeconds(60), 10);
                        for (Message m : got) {
                            seen.computeIfAbsent(String.valueOf(m.getPayload()), k -> new AtomicInteger()).incrementAndGet();
                        }
                        if (!got.isEmpty()) {
                            client.acknowledge(q, ids(got));
                            acked.addAndGet(got.size());
                        }
                    }
                }));
            }
            CompletableFuture.allOf(pollers.toArray(new CompletableFuture[0])).join();
            equal("4 concurrent pollers get every one of " + total + " messages", total, seen.size());
            check("each exactly once", seen.values().stream().allMatch(n -> n.get() == 1),
                    seen.entrySet().stream().filter(e -> e.getValue().get() != 1).map(Map.Entry::getKey).limit(10).toList());
            equal("and acknowledging them empties the queue", 0L, client.getMessageCount(q));
        }

        void keys(EmoClients clients, String readerKey, String nobodyKey) {
            String q = prefix + "-keys";
            client.send(q, "kept");
            BaseQueueService reader = clients.using(readerKey);
            BaseQueueService nobody = clients.using(nobodyKey);
            BaseQueueService unknown = clients.using("no-such-key");
            equal("a key with get_status may count", 1L, reader.getMessageCount(q));
            checks.expectThrows(label + "but not send: UnauthorizedException", UnauthorizedException.class,
                    () -> reader.send(q, "refused"), e -> equal("with EmoDB's reason", "not authorized", e.getReason()));
            checks.expectThrows(label + "nor poll: UnauthorizedException", UnauthorizedException.class,
                    () -> reader.poll(q, Duration.ofSeconds(30), 1));
            checks.expectThrows(label + "nor purge: UnauthorizedException", UnauthorizedException.class, () -> reader.purge(q));
            checks.expectThrows(label + "a key without permissions may not count: UnauthorizedException",
                    UnauthorizedException.class, () -> nobody.getMessageCount(q));
            checks.expectThrows(label + "an unknown key: UnauthorizedException", UnauthorizedException.class,
                    () -> unknown.getClaimCount(q));
            checks.expectThrows(label + "an empty key: the client refuses it before sending anything",
                    RuntimeException.class, () -> clients.using(""));
            equal("the refused calls changed nothing", List.of("kept"), client.peek(q, 10).stream().map(Message::getPayload).toList());
            equal("and claimed nothing", 0L, client.getClaimCount(q));
        }
    }
}
