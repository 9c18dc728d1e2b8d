package main

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

const (
	producers = 20 // concurrent SendMessageBatch calls of 10 messages each
	consumers = 4
)

// concurrentLoad: many batch sends in flight at once while consumers receive and delete
// concurrently; every message is received exactly once and none is left.
func (s *scenarios) concurrentLoad() {
	c := s.checks
	url := s.create(s.run+"-load", map[string]string{"VisibilityTimeout": "60"})
	total := producers * 10
	var failedSends, deleted atomic.Int64
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			var entries []types.SendMessageBatchRequestEntry
			for i := 0; i < 10; i++ {
				e := types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("m%d", i)), MessageBody: aws.String(fmt.Sprintf("load %d-%d", p, i))}
				if i == 0 {
					e.MessageAttributes = sampleAttributes()
				}
				entries = append(entries, e)
			}
			out, err := s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			if err != nil {
				failedSends.Add(10)
				return
			}
			failedSends.Add(int64(len(out.Failed)))
		}(p)
	}
	deadline := time.Now().Add(60 * time.Second)
	for w := 0; w < consumers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for deleted.Load() < int64(total) && time.Now().Before(deadline) {
				out, err := s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
					WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
				if err != nil || len(out.Messages) == 0 {
					continue
				}
				mu.Lock()
				for _, m := range out.Messages {
					seen[aws.ToString(m.Body)]++
				}
				mu.Unlock()
				deleted.Add(int64(s.deleteAll(url, out.Messages)))
			}
		}()
	}
	wg.Wait()
	c.Equal(fmt.Sprintf("%d messages sent in %d concurrent batches, none failed", total, producers), int64(0), failedSends.Load())
	c.Equal(fmt.Sprintf("%d concurrent consumers received every message", consumers), total, len(seen))
	twice := []string{}
	for body, n := range seen {
		if n != 1 {
			twice = append(twice, body)
		}
	}
	c.Check("each exactly once", len(twice) == 0, twice)
	c.Equal("every delete succeeded", int64(total), deleted.Load())
	left := s.attributes(url)
	c.Equal("nothing left visible", "0", left["ApproximateNumberOfMessages"])
	c.Equal("nothing left in flight", "0", left["ApproximateNumberOfMessagesNotVisible"])
}

// concurrentLongPolls: several long polls wait at once and are woken by the sends.
func (s *scenarios) concurrentLongPolls() {
	c := s.checks
	url := s.create(s.run+"-long-many", nil)
	polls := 6
	results := make(chan []types.Message, polls)
	for i := 0; i < polls; i++ {
		go func() { results <- s.receive(url, 1, 10) }()
	}
	time.Sleep(time.Second)
	sentAt := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < polls; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprintf("wake %d", i))}))
		}(i)
	}
	wg.Wait()
	bodies := map[string]int{}
	received := 0
	for i := 0; i < polls; i++ {
		for _, m := range <-results {
			bodies[aws.ToString(m.Body)]++
			received++
		}
	}
	woke := time.Since(sentAt).Seconds()
	c.Equal(fmt.Sprintf("%d waiting long polls share the sent messages, none twice", polls), received, len(bodies))
	c.Check("and they are woken before their 10 s end", woke < 8, woke)
	for round := 0; round < 5 && received < polls; round++ {
		received += len(s.receive(url, 10, 1))
	}
	c.Equal("every sent message was received once", polls, received)
}

// fifoOrder: one FIFO group of 30 sent in three batches arrives whole and in order.
func (s *scenarios) fifoOrder() {
	c := s.checks
	url := s.create(s.run+"-thirty.fifo", map[string]string{"FifoQueue": "true"})
	for batch := 0; batch < 3; batch++ {
		var entries []types.SendMessageBatchRequestEntry
		for i := 0; i < 10; i++ {
			n := batch*10 + i
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("f%d", i)),
				MessageBody: aws.String(fmt.Sprintf("n%d", n)), MessageGroupId: aws.String("one"),
				MessageDeduplicationId: aws.String(fmt.Sprintf("dedup-%d", n))})
		}
		must(s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}))
	}
	var order, expected []string
	for round := 0; round < 10 && len(order) < 30; round++ {
		got := s.receive(url, 10, 1)
		for _, m := range got {
			order = append(order, aws.ToString(m.Body))
		}
		s.deleteAll(url, got)
	}
	for n := 0; n < 30; n++ {
		expected = append(expected, fmt.Sprintf("n%d", n))
	}
	c.Check("one FIFO group of 30 arrives whole and in order", reflect.DeepEqual(expected, order), order)
}
