package io.spoolq.clients.sqs;

import io.spoolq.clients.Checks;
import java.net.URI;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsAsyncClient;
import software.amazon.awssdk.services.sqs.SqsClient;

/**
 * The AWS SDK for Java v2 against spoolq's SQS door: {@link SyncScenarios} with {@code SqsClient}
 * (Apache HTTP client) and {@link AsyncScenarios} with {@code SqsAsyncClient} (Netty), both with the
 * SDK's defaults (MD5 checks of bodies and message attributes on) and an endpoint override to the
 * server. The server runs with identities, so every request is SigV4-verified.
 *
 * <p>Environment: {@code SPOOLQ_URL}; {@code SQS_ACCESS_KEY}/{@code SQS_SECRET_KEY} (an identity
 * that may do everything); {@code SQS_READER_KEY}/{@code SQS_READER_SECRET} (one that may only
 * read queues' status); {@code RUN_ID} (a prefix that keeps this run's queues apart).
 */
public final class Main {
    private Main() {
    }

    static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException("missing environment variable " + name);
        }
        return value;
    }

    static SqsClient sync(String accessKey, String secret) {
        return sync(accessKey, secret, Region.US_EAST_1);
    }

    static SqsClient sync(String accessKey, String secret, Region region) {
        return SqsClient.builder()
                .endpointOverride(URI.create(env("SPOOLQ_URL")))
                .region(region)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secret)))
                .httpClientBuilder(ApacheHttpClient.builder())
                .build();
    }

    static SqsAsyncClient async(String accessKey, String secret) {
        return SqsAsyncClient.builder()
                .endpointOverride(URI.create(env("SPOOLQ_URL")))
                .region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secret)))
                .httpClientBuilder(NettyNioAsyncHttpClient.builder().maxConcurrency(64))
                .build();
    }

    public static void main(String[] args) {
        Checks checks = new Checks();
        String run = env("RUN_ID");
        String key = env("SQS_ACCESS_KEY");
        String secret = env("SQS_SECRET_KEY");
        try (SqsClient sqs = sync(key, secret);
             SqsClient reader = sync(env("SQS_READER_KEY"), env("SQS_READER_SECRET"));
             SqsClient wrongSecret = sync(key, secret + "x");
             SqsClient unknownKey = sync("AKIAUNKNOWN0000", secret);
             SqsClient ireland = sync(key, secret, Region.EU_WEST_1)) {
            SyncScenarios scenarios = new SyncScenarios(checks, sqs, run);
            scenarios.runAll();
            checks.step("credentials", () -> scenarios.credentials(reader, wrongSecret, unknownKey));
            checks.step("regions", () -> scenarios.regions(ireland));
        }
        try (SqsAsyncClient sqs = async(key, secret)) {
            new AsyncScenarios(checks, sqs, run).runAll();
        }
        checks.finish();
    }
}
