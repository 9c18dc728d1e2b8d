package io.spoolq.clients;

import java.util.Objects;
import java.util.function.Consumer;

/**
 * Numbered assertions for a client program: each check prints {@code ok N - what} or
 * {@code FAIL N - what: why}, a step that throws counts as one failed check and the program goes on
 * with the next step, and {@link #finish()} prints {@code N passed, M failed} last and exits 1 on any
 * failure. The pytest wrapper (tests/clients/) reads those lines.
 */
public final class Checks {
    /** A step of the program: a lambda that may throw anything. */
    @FunctionalInterface
    public interface Step {
        void run() throws Exception;
    }

    private int number;
    private int passed;
    private int failed;

    /** Records one assertion. */
    public synchronized void check(String what, boolean ok, Object detail) {
        number++;
        if (ok) {
            passed++;
            System.out.println("ok " + number + " - " + what);
        } else {
            failed++;
            System.out.println("FAIL " + number + " - " + what + ": " + detail);
        }
        System.out.flush();
    }

    public void check(String what, boolean ok) {
        check(what, ok, "false");
    }

    /** Records that {@code actual} equals {@code expected}. */
    public void equal(String what, Object expected, Object actual) {
        check(what, Objects.equals(expected, actual), "expected <" + expected + "> but was <" + actual + ">");
    }

    /** Runs a step; an exception it throws is one failed check naming the step. */
    public void step(String what, Step step) {
        try {
            step.run();
        } catch (Throwable e) {
            check(what + " (step threw)", false, describe(e));
        }
    }

    /** Records that {@code step} throws a {@code type}, then hands the exception to {@code more}. */
    public <T extends Throwable> void expectThrows(String what, Class<T> type, Step step, Consumer<T> more) {
        Throwable thrown = null;
        try {
            step.run();
        } catch (Throwable e) {
            thrown = unwrap(e);
        }
        if (thrown == null) {
            check(what, false, "expected " + type.getSimpleName() + ", nothing was thrown");
        } else if (!type.isInstance(thrown)) {
            check(what, false, "expected " + type.getSimpleName() + " but got " + describe(thrown));
        } else {
            check(what, true);
            if (more != null) {
                more.accept(type.cast(thrown));
            }
        }
    }

    public <T extends Throwable> void expectThrows(String what, Class<T> type, Step step) {
        expectThrows(what, type, step, null);
    }

    /** Prints the closing line and exits: 0 when every check passed. */
    public void finish() {
        System.out.println(passed + " passed, " + failed + " failed");
        System.out.flush();
        System.exit(failed == 0 && passed > 0 ? 0 : 1);
    }

    /** The cause a future or a wrapper hides (CompletionException, ExecutionException). */
    public static Throwable unwrap(Throwable e) {
        Throwable t = e;
        while ((t instanceof java.util.concurrent.CompletionException
                || t instanceof java.util.concurrent.ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static String describe(Throwable e) {
        Throwable t = unwrap(e);
        StackTraceElement[] where = t.getStackTrace();
        String at = where.length > 0 ? " at " + where[0] : "";
        return t.getClass().getName() + ": " + t.getMessage() + at;
    }
}
