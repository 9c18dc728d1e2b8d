// The AWS SDK for Go v2 against spoolq's SQS door: the scenarios of the Java SDK program
// (tests/clients/java/aws-sdk-sqs) with the Go client, its defaults kept (the MD5 checks of message
// bodies on: the Go SDK checks bodies, not attributes) and BaseEndpoint pointed at the server. The
// server runs with identities, so every request is SigV4-verified.
//
// Environment: SPOOLQ_URL; SQS_ACCESS_KEY/SQS_SECRET_KEY (an identity that may do everything);
// SQS_READER_KEY/SQS_READER_SECRET (one that may only read queues' status); RUN_ID (a prefix that
// keeps this run's queues apart).
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func env(name string) string {
	value := os.Getenv(name)
	if value == "" {
		fmt.Printf("missing environment variable %s\n0 passed, 1 failed\n", name)
		os.Exit(1)
	}
	return value
}

func client(accessKey, secret string) *sqs.Client {
	return regionalClient(accessKey, secret, "us-east-1")
}

func regionalClient(accessKey, secret, region string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       region,
		BaseEndpoint: aws.String(env("SPOOLQ_URL")),
		Credentials:  credentials.NewStaticCredentialsProvider(accessKey, secret, ""),
		HTTPClient:   ownBodies{awshttp.NewBuildableClient()}, // see quirks.go
	})
}

func main() {
	checks := &Checks{}
	key, secret := env("SQS_ACCESS_KEY"), env("SQS_SECRET_KEY")
	s := &scenarios{checks: checks, sqs: client(key, secret), run: env("RUN_ID")}
	checks.Step("standard queue", s.standardQueue)
	checks.Step("message sizes", s.sizes)
	checks.Step("batches", s.batches)
	checks.Step("visibility", s.visibility)
	checks.Step("long poll", s.longPoll)
	checks.Step("fifo queue", s.fifo)
	checks.Step("dead-letter queue", s.deadLetters)
	checks.Step("modelled errors", s.errors)
	checks.Step("purge, tags, list, delete", s.lifecycle)
	checks.Step("credentials", func() {
		s.credentials(client(env("SQS_READER_KEY"), env("SQS_READER_SECRET")), client(key, secret+"x"),
			client("AKIAUNKNOWN0000", secret))
	})
	checks.Step("regions", func() { s.regions(regionalClient(key, secret, "eu-west-1")) })
	checks.Step("concurrent producers and consumers", s.concurrentLoad)
	checks.Step("concurrent long polls", s.concurrentLongPolls)
	checks.Step("fifo group of 30", s.fifoOrder)
	checks.Finish()
}
