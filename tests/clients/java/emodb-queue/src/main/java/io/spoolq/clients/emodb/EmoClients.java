package io.spoolq.clients.emodb;

import com.bazaarvoice.emodb.common.jersey.dropwizard.JerseyEmoClient;
import com.bazaarvoice.emodb.common.json.CustomJsonObjectMapperFactory;
import com.bazaarvoice.emodb.queue.api.BaseQueueService;
import com.bazaarvoice.emodb.queue.client.DedupQueueClient;
import com.bazaarvoice.emodb.queue.client.DedupQueueServiceAuthenticator;
import com.bazaarvoice.emodb.queue.client.QueueClient;
import com.bazaarvoice.emodb.queue.client.QueueServiceAuthenticator;
import com.fasterxml.jackson.jaxrs.json.JacksonJsonProvider;
import com.sun.jersey.api.client.Client;
import com.sun.jersey.api.client.config.ClientConfig;
import com.sun.jersey.api.client.config.DefaultClientConfig;
import java.net.URI;

/**
 * EmoDB's {@code QueueClient} or {@code DedupQueueClient} on EmoDB's Jersey 1 {@code JerseyEmoClient},
 * pointed at one server's {@code /queue/1} or {@code /dedupq/1} (a fixed host, no service discovery),
 * behind EmoDB's authenticator that binds an API key: {@code QueueServiceAuthenticator.proxied(new
 * QueueClient(endPoint, new JerseyEmoClient(client))).usingCredentials(key)}, as EmoDB's QueueJerseyTest
 * builds it. The Jersey client writes request bodies with Jackson's JAX-RS provider and EmoDB's own
 * {@code ObjectMapper}, as the client's Dropwizard factory configures it.
 */
final class EmoClients implements AutoCloseable {
    private final Client jersey;
    private final QueueServiceAuthenticator queue;
    private final DedupQueueServiceAuthenticator dedup;

    EmoClients(URI endPoint, boolean dedupQueues) {
        ClientConfig config = new DefaultClientConfig();
        config.getSingletons().add(new JacksonJsonProvider(CustomJsonObjectMapperFactory.build()));
        config.getProperties().put(ClientConfig.PROPERTY_CONNECT_TIMEOUT, 10_000);
        config.getProperties().put(ClientConfig.PROPERTY_READ_TIMEOUT, 60_000);
        jersey = Client.create(config);
        JerseyEmoClient emo = new JerseyEmoClient(jersey);
        queue = dedupQueues ? null : QueueServiceAuthenticator.proxied(new QueueClient(endPoint, emo));
        dedup = dedupQueues ? DedupQueueServiceAuthenticator.proxied(new DedupQueueClient(endPoint, emo)) : null;
    }

    /** The service as seen by one API key. */
    BaseQueueService using(String apiKey) {
        return queue != null ? queue.usingCredentials(apiKey) : dedup.usingCredentials(apiKey);
    }

    @Override
    public void close() {
        jersey.destroy();
    }
}
