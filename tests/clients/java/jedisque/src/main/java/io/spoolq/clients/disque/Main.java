package io.spoolq.clients.disque;

import com.github.xetorthio.jedisque.Jedisque;
import com.github.xetorthio.jedisque.Job;
import com.github.xetorthio.jedisque.JobParams;
import io.spoolq.clients.Checks;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * jedisque 0.0.4, a Java Disque client (on Jedis 2.7), against spoolq's Disque door: AUTH and
 * permissions, ADDJOB with its options, GETJOB (blocking, several queues, counts), ACKJOB, FASTACK,
 * DELJOB, ENQUEUE, DEQUEUE, WORKING, QLEN, QPEEK, SHOW, INFO, PING, Disque's errors, redelivery after
 * RETRY, and many producers and consumers on their own connections at once.
 *
 * <p>jedisque has no AUTH method: {@link Client} sends it through Jedis's own command, as an
 * application would. Environment: {@code DISQUE_PORT}, {@code RUN_ID}, {@code DISQUE_KEY} (an API key
 * that may do everything), {@code DISQUE_READER_KEY} (one that may only read queues' status).
 */
public final class Main {
    /** jedisque with the AUTH command it lacks. */
    static final class Client extends Jedisque {
        Client() {
            super(URI.create("disque://127.0.0.1:" + env("DISQUE_PORT")));
            // Jedis gives up on a reply after 2 s by default, and takes a read timeout only when it
            // connects (a later setSoTimeout changes nothing on an open connection): set here, for
            // every connection. A blocked GETJOB here waits up to 10 s, and a durable ADDJOB waits
            // for its flush, which on a machine busy with other work can take over 2 s. The
            // checks' own bounds (a GETJOB woken promptly, a RETRY or DELAY kept) are measured.
            setSoTimeout(15000);
        }

        String auth(String key) {
            sendCommand(Protocol.Command.AUTH, key);
            return getStatusCodeReply();
        }

        /** SHOW's reply as it comes: a flat list of field names and values. */
        List<Object> showRaw(String id) {
            sendCommand(com.github.xetorthio.jedisque.Command.SHOW, id);
            return getObjectMultiBulkReply();
        }
    }

    private final Checks checks = new Checks();
    private final String run = env("RUN_ID");

    public static void main(String[] args) {
        new Main().runAll();
    }

    static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException("missing environment variable " + name);
        }
        return value;
    }

    static Client authed() {
        Client c = new Client();
        c.auth(env("DISQUE_KEY"));
        return c;
    }

    void runAll() {
        checks.step("auth", this::auth);
        checks.step("add, get, ack", this::jobCycle);
        checks.step("job options", this::options);
        checks.step("active and queued jobs", this::activeAndQueued);
        checks.step("blocking GETJOB", this::blocking);
        checks.step("errors", this::errors);
        checks.step("concurrent producers and consumers", this::concurrent);
        checks.finish();
    }

    private void auth() {
        try (Client anonymous = new Client()) {
            checks.equal("PING needs no key", "PONG", anonymous.ping());
            checks.expectThrows("ADDJOB without AUTH: NOAUTH", JedisDataException.class,
                    () -> anonymous.addJob(run + "-auth", "x", 0),
                    e -> checks.check("NOAUTH Authentication required.", e.getMessage().startsWith("NOAUTH"), e.getMessage()));
            checks.expectThrows("AUTH with a wrong key is an error", JedisDataException.class, () -> anonymous.auth("wrong-key"));
            checks.expectThrows("and the connection is still anonymous", JedisDataException.class,
                    () -> anonymous.qlen(run + "-auth"));
            checks.equal("AUTH with the key: OK", "OK", anonymous.auth(env("DISQUE_KEY")));
            checks.check("then ADDJOB works", anonymous.addJob(run + "-auth", "x", 0).startsWith("D-"));
        }
        try (Client reader = new Client()) {
            reader.auth(env("DISQUE_READER_KEY"));
            checks.equal("a key with get_status reads QLEN", 1L, reader.qlen(run + "-auth"));
            checks.expectThrows("but may not ADDJOB: NOPERM", JedisDataException.class,
                    () -> reader.addJob(run + "-auth", "y", 0),
                    e -> checks.check("the refusal names the queue", e.getMessage().startsWith("NOPERM")
                            && e.getMessage().contains(run + "-auth"), e.getMessage()));
            checks.expectThrows("nor GETJOB", JedisDataException.class, () -> reader.getJob(100, 1, run + "-auth"));
        }
        try (Client c = authed()) {
            checks.equal("the refused ADDJOB added nothing", 1L, c.qlen(run + "-auth"));
        }
    }

    private void jobCycle() {
        String q = run + "-cycle";
        try (Client c = authed()) {
            String id = c.addJob(q, "{\"task\":\"resize\",\"size\":\"ünïcode ✓\"}", 0);
            checks.check("ADDJOB returns a Disque job id", id != null && id.startsWith("D-"), id);
            checks.equal("QLEN counts it", 1L, c.qlen(q));
            List<Job> peeked = c.qpeek(q, 10);
            checks.equal("QPEEK shows it without claiming", id, peeked.isEmpty() ? null : peeked.get(0).getId());
            checks.equal("still queued after QPEEK", 1L, c.qlen(q));
            List<Job> got = c.getJob(q);
            checks.equal("GETJOB hands it over", 1, got == null ? 0 : got.size());
            if (got == null || got.isEmpty()) {
                return;
            }
            Job job = got.get(0);
            checks.equal("with its id", id, job.getId());
            checks.equal("its queue", q, job.getQueueName());
            checks.equal("and its body, byte for byte", "{\"task\":\"resize\",\"size\":\"ünïcode ✓\"}", job.getStringBody());
            checks.equal("a claimed job leaves the queue", 0L, c.qlen(q));
            checks.check("WORKING extends the claim and returns its seconds", c.working(id) > 0);
            checks.equal("ACKJOB acknowledges it", 1L, c.ackjob(id));
            checks.equal("a second ACKJOB knows no such job", 0L, c.ackjob(id));
            checks.equal("nothing left", 0L, c.qlen(q));
            byte[] binary = new byte[256 * 4];
            for (int i = 0; i < binary.length; i++) {
                binary[i] = (byte) i;  // every byte value, NUL and invalid UTF-8 included
            }
            String binaryId = c.addJob(q.getBytes(java.nio.charset.StandardCharsets.UTF_8), binary, 0);
            List<Job> binaryJob = c.getJob(q);
            checks.check("a binary job (every byte value) comes back byte for byte", binaryJob != null && binaryJob.size() == 1
                    && binaryJob.get(0).getId().equals(binaryId) && java.util.Arrays.equals(binary, binaryJob.get(0).getBodyAsBytes()),
                    binaryJob);
            c.ackjob(binaryId);
            String big = "j".repeat(1 << 20);
            String bigId = c.addJob(q, big, 0);
            List<Job> bigJob = c.getJob(q);
            checks.equal("a job of 1 MiB comes back whole", big.length(), bigJob.isEmpty() ? -1 : bigJob.get(0).getStringBody().length());
            c.ackjob(bigId);
            String info = c.info();
            checks.check("INFO answers its sections", info.contains("# Server") || info.contains("# Jobs"),
                    info.length() > 60 ? info.substring(0, 60) : info);
        }
    }

    private void options() throws Exception {
        String q = run + "-options";
        try (Client c = authed()) {
            String retried = c.addJob(q, "retry me", 0, new JobParams().setRetry(1));
            checks.equal("GETJOB claims the job with RETRY 1", retried, c.getJob(q).get(0).getId());
            checks.equal("it is not queued while claimed", 0L, c.qlen(q));
            long claimed = System.nanoTime();
            List<Job> again = c.getJob(5000, 1, q);
            double after = (System.nanoTime() - claimed) / 1e9;
            checks.equal("unacknowledged, it is delivered again after its RETRY", retried,
                    again == null || again.isEmpty() ? null : again.get(0).getId());
            checks.check("not before its RETRY ended, and within about a second after", after > 0.9 && after < 3.2, after + " s");
            c.ackjob(retried);

            String delayed = c.addJob(q, "later", 0, new JobParams().setDelay(1));
            checks.equal("a job with DELAY 1 is not queued at once", 0L, c.qlen(q));
            // The store queues a due job in its next maintenance pass (one a second), so a delay ends
            // within about a second after its time, where Disque's 10 Hz cron takes up to 100 ms.
            long start = System.nanoTime();
            while (c.qlen(q) == 0 && System.nanoTime() - start < 4_000_000_000L) {
                Thread.sleep(50);
            }
            double queuedAfter = (System.nanoTime() - start) / 1e9;
            checks.equal("it is queued after its delay", 1L, c.qlen(q));
            checks.check("within about a second after its time", queuedAfter < 3.2, queuedAfter + " s");
            c.delJob(delayed);
            checks.equal("DELJOB removes it", 0L, c.qlen(q));

            c.addJob(q, "one", 0);
            checks.expectThrows("ADDJOB with MAXLEN 1 on a queue of one: MAXLEN", JedisDataException.class,
                    () -> c.addJob(q, "two", 0, new JobParams().setMaxlen(1)),
                    e -> checks.check("the error is Disque's", e.getMessage().startsWith("MAXLEN"), e.getMessage()));
            String withTtl = c.addJob(q, "ttl", 0, new JobParams().setTTL(60).setReplicate(1).setAsync(true));
            checks.check("ADDJOB with TTL, REPLICATE and ASYNC is accepted", withTtl.startsWith("D-"), withTtl);
            checks.equal("FASTACK removes queued jobs too", 1L, c.fastack(withTtl));
            List<Job> rest = c.getJob(100, 10, q);
            checks.equal("the first job is still there", "one", rest == null || rest.isEmpty() ? null : rest.get(0).getStringBody());
            if (rest != null) {
                for (Job j : rest) {
                    c.ackjob(j.getId());
                }
            }
        }
    }

    private void activeAndQueued() {
        String q = run + "-states";
        try (Client c = authed()) {
            String id = c.addJob(q, "state", 0);
            c.getJob(q);
            checks.equal("ENQUEUE puts a claimed job back", 1L, c.enqueue(id));
            checks.equal("it is queued again", 1L, c.qlen(q));
            checks.equal("DEQUEUE takes it out of the queue", 1L, c.dequeue(id));
            checks.equal("it is no longer queued", 0L, c.qlen(q));
            c.enqueue(id);
            // jedisque 0.0.4's show() reads the reply by position as early Disque laid it out (13 fields,
            // the body at index 25). Disque 1.0 added nacks and additional-deliveries (15 fields), which
            // spoolq answers as Disque 1.0 does, so show() casts the nacks count to a list and throws.
            // The reply is read here as it comes, through jedisque's own connection.
            checks.expectThrows("jedisque's show() cannot read Disque 1.0's SHOW reply (a quirk of the client)",
                    ClassCastException.class, () -> c.show(id));
            List<Object> show = c.showRaw(id);
            Map<String, Object> fields = new java.util.HashMap<>();
            for (int i = 0; i + 1 < show.size(); i += 2) {
                fields.put(new String((byte[]) show.get(i)), show.get(i + 1));
            }
            checks.equal("SHOW answers Disque's 15 fields", 15, fields.size());
            checks.equal("SHOW names the job's queue", q, fields.get("queue") instanceof byte[] b ? new String(b) : fields.get("queue"));
            checks.equal("and its state", "queued", fields.get("state") instanceof byte[] b ? new String(b) : fields.get("state"));
            c.delJob(id);
        }
    }

    private void blocking() throws Exception {
        String q1 = run + "-first";
        String q2 = run + "-second";
        try (Client waiting = authed(); Client c = authed()) {
            long start = System.nanoTime();
            // longer than Jedis's default read timeout of 2 s: answered only if the connection took ours
            List<Job> none = waiting.getJob(2500, 1, q1);
            double waited = (System.nanoTime() - start) / 1e9;
            checks.check("GETJOB TIMEOUT 2500 on an empty queue answers nothing", none == null || none.isEmpty(), none);
            checks.check("after its timeout", waited >= 2.45 && waited < 5, waited + " s");

            CompletableFuture<List<Job>> blocked = CompletableFuture.supplyAsync(() -> waiting.getJob(10000, 1, q1, q2));
            Thread.sleep(500);
            long sentAt = System.nanoTime();
            String id = c.addJob(q2, "wake", 0);
            List<Job> got = blocked.get();
            double woke = (System.nanoTime() - sentAt) / 1e9;
            checks.equal("a blocked GETJOB FROM two queues gets the job added to the second", id,
                    got == null || got.isEmpty() ? null : got.get(0).getId());
            checks.check("promptly", woke < 3, woke + " s");
            c.ackjob(id);

            for (int i = 0; i < 3; i++) {
                c.addJob(q1, "a" + i, 0);
                c.addJob(q2, "b" + i, 0);
            }
            List<Job> many = c.getJob(100, 10, q1, q2);
            List<String> bodies = new ArrayList<>();
            for (Job j : many) {
                bodies.add(j.getStringBody());
                c.ackjob(j.getId());
            }
            checks.equal("GETJOB COUNT 10 takes the first queue's jobs, then the second's", List.of("a0", "a1", "a2", "b0", "b1", "b2"), bodies);
        }
    }

    private void errors() {
        try (Client c = authed()) {
            checks.expectThrows("ACKJOB of a malformed id: BADID", JedisDataException.class, () -> c.ackjob("not-a-job-id"),
                    e -> checks.check("Invalid Job ID format.", e.getMessage().startsWith("BADID"), e.getMessage()));
            checks.expectThrows("WORKING on an unknown job: NOJOB", JedisDataException.class,
                    () -> c.working("D-00000000-0000000000000000000000000000000000000000-0001"));
            checks.expectThrows("ADDJOB with a negative timeout is an error", JedisDataException.class,
                    () -> c.addJob(run + "-errors", "x", -1));
            checks.equal("the connection still works after the errors", "PONG", c.ping());
            checks.equal("and the refused ADDJOB added nothing", 0L, c.qlen(run + "-errors"));
        }
    }

    private void concurrent() throws Exception {
        String q = run + "-load";
        int producers = 4;
        int perProducer = 250;
        int total = producers * perProducer;
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        AtomicInteger acked = new AtomicInteger();
        List<CompletableFuture<?>> work = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int producer = p;
            work.add(CompletableFuture.runAsync(() -> {
                try (Client c = authed()) {
                    for (int i = 0; i < perProducer; i++) {
                        c.addJob(q, "job " + producer + "-" + i, 0);
                    }
                }
            }));
        }
        long deadline = System.nanoTime() + 60_000_000_000L;
        for (int w = 0; w < 4; w++) {
            work.add(CompletableFuture.runAsync(() -> {
                try (Client c = authed()) {
                    while (acked.get() < total && System.nanoTime() < deadline) {
                        List<Job> got = c.getJob(200, 10, q);
                        if (got == null) {
                            continue;
                        }
                        String[] ids = new String[got.size()];
                        for (int i = 0; i < got.size(); i++) {
                            seen.computeIfAbsent(got.get(i).getStringBody(), k -> new AtomicInteger()).incrementAndGet();
                            ids[i] = got.get(i).getId();
                        }
                        acked.addAndGet(c.ackjob(ids).intValue());
                    }
                }
            }));
        }
        CompletableFuture.allOf(work.toArray(new CompletableFuture[0])).join();
        checks.equal(producers + " producers and 4 consumers, each on its own connection: every job received", total, seen.size());
        checks.check("each exactly once", seen.values().stream().allMatch(n -> n.get() == 1),
                seen.entrySet().stream().filter(e -> e.getValue().get() != 1).map(Map.Entry::getKey).limit(10).toList());
        checks.equal("every ACKJOB counted its jobs", total, acked.get());
        try (Client c = authed()) {
            checks.equal("nothing left queued", 0L, c.qlen(q));
        }
    }
}
