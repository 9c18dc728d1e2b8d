package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

var ctx = context.Background()

type scenarios struct {
	checks *Checks
	sqs    *sqs.Client
	run    string
}

func (s *scenarios) create(name string, attributes map[string]string) string {
	out := must(s.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attributes}))
	return *out.QueueUrl
}

func (s *scenarios) attributes(url string) map[string]string {
	out := must(s.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}}))
	return out.Attributes
}

func (s *scenarios) receive(url string, max, wait int32) []types.Message {
	out := must(s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: max,
		WaitTimeSeconds: wait, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}}))
	return out.Messages
}

func (s *scenarios) deleteAll(url string, messages []types.Message) int {
	if len(messages) == 0 {
		return 0
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(messages))
	for i, m := range messages {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("d%d", i)), ReceiptHandle: m.ReceiptHandle}
	}
	out := must(s.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}))
	return len(out.Successful)
}

func sampleAttributes() map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		"Text":        {DataType: aws.String("String"), StringValue: aws.String("héllo wörld ✓")},
		"Count":       {DataType: aws.String("Number"), StringValue: aws.String("12345.678")},
		"Blob":        {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 0xfe, 0xff}},
		"Kind.custom": {DataType: aws.String("String.custom"), StringValue: aws.String("x")},
	}
}

// sameAttributes compares message attributes by their values (the SDK's structs carry no-copy fields).
func sameAttributes(a, b map[string]types.MessageAttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || aws.ToString(va.DataType) != aws.ToString(vb.DataType) ||
			aws.ToString(va.StringValue) != aws.ToString(vb.StringValue) || !reflect.DeepEqual(va.BinaryValue, vb.BinaryValue) {
			return false
		}
	}
	return true
}

func (s *scenarios) standardQueue() {
	c := s.checks
	url := s.create(s.run+"-std", map[string]string{"VisibilityTimeout": "30"})
	c.Equal("CreateQueue again with the same attributes returns the same URL", url,
		s.create(s.run+"-std", map[string]string{"VisibilityTimeout": "30"}))
	got := must(s.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(s.run + "-std")}))
	c.Equal("GetQueueUrl finds the queue", url, *got.QueueUrl)
	c.Check("the queue URL's host is the endpoint", strings.HasPrefix(url, env("SPOOLQ_URL")), url)

	body := "{\"order\": 1, \"text\": \"naïve café ✓ \\r\\n\"}\r\n"
	sent := must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body),
		MessageAttributes: sampleAttributes()})) // the SDK checks MD5OfMessageBody
	c.Check("SendMessage returns a MessageId", aws.ToString(sent.MessageId) != "", sent.MessageId)
	c.Check("SendMessage returns MD5OfMessageAttributes", aws.ToString(sent.MD5OfMessageAttributes) != "", nil)

	messages := s.receive(url, 10, 1) // the received body's MD5 checked by the SDK
	c.Equal("ReceiveMessage returns the one message", 1, len(messages))
	if len(messages) == 0 {
		return
	}
	m := messages[0]
	c.Equal("the body comes back byte for byte (CR, LF, non-ASCII)", body, aws.ToString(m.Body))
	c.Equal("the MessageId is the one SendMessage returned", aws.ToString(sent.MessageId), aws.ToString(m.MessageId))
	c.Check("every message attribute comes back", sameAttributes(sampleAttributes(), m.MessageAttributes), m.MessageAttributes)
	c.Equal("ApproximateReceiveCount is 1", "1", m.Attributes["ApproximateReceiveCount"])
	c.Check("SentTimestamp is set", m.Attributes["SentTimestamp"] != "", m.Attributes)
	inFlight := s.attributes(url)
	c.Equal("the message is in flight", "1", inFlight["ApproximateNumberOfMessagesNotVisible"])
	c.Equal("and not visible", "0", inFlight["ApproximateNumberOfMessages"])
	c.Equal("a second receive finds nothing while it is in flight", 0, len(s.receive(url, 10, 0)))
	must(s.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}))
	after := s.attributes(url)
	c.Equal("DeleteMessage removes it", "0", after["ApproximateNumberOfMessagesNotVisible"])
	c.Equal("the QueueArn names the queue", "arn:aws:sqs:us-east-1:123456789012:"+s.run+"-std", after["QueueArn"])
}

func (s *scenarios) sizes() {
	c := s.checks
	limit := 262144
	url := s.create(s.run+"-sizes", map[string]string{"MaximumMessageSize": fmt.Sprint(limit)})
	largest := strings.Repeat("é", limit/2) // 2 bytes each in UTF-8: exactly the queue's limit
	must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(largest)}))
	got := s.receive(url, 1, 1)
	c.Check("a body of exactly MaximumMessageSize bytes round-trips", len(got) == 1 && aws.ToString(got[0].Body) == largest, len(got))
	_, err := s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(largest + "x")})
	c.Check("a body one byte over MaximumMessageSize: 400 InvalidParameterValue", StatusCode(err) == 400 && ErrorCode(err) == "InvalidParameterValue", err)
	c.Equal("and nothing is queued", "0", s.attributes(url)["ApproximateNumberOfMessages"])
}

func (s *scenarios) batches() {
	c := s.checks
	url := s.create(s.run+"-batch", nil)
	var entries []types.SendMessageBatchRequestEntry
	for i := 0; i < 10; i++ {
		e := types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("e%d", i)), MessageBody: aws.String(fmt.Sprintf("batch %d", i))}
		if i%3 == 0 {
			e.MessageAttributes = sampleAttributes()
		}
		entries = append(entries, e)
	}
	sent := must(s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}))
	c.Equal("SendMessageBatch: 10 successful", 10, len(sent.Successful))
	c.Equal("SendMessageBatch: none failed", 0, len(sent.Failed))
	bodies := map[string]bool{}
	var received []types.Message
	for round := 0; round < 10 && len(bodies) < 10; round++ {
		for _, m := range s.receive(url, 10, 1) {
			bodies[aws.ToString(m.Body)] = true
			received = append(received, m)
		}
	}
	c.Equal("every batch message is received once", 10, len(bodies))
	c.Equal("DeleteMessageBatch: all successful", len(received), s.deleteAll(url, received))

	partly := must(s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("good"), MessageBody: aws.String("fine")},
		{Id: aws.String("bad"), MessageBody: aws.String("bad \x00 body")},
	}}))
	c.Equal("a batch with one bad body: one successful", 1, len(partly.Successful))
	c.Check("and the bad entry in Failed, the sender's fault",
		len(partly.Failed) == 1 && aws.ToString(partly.Failed[0].Id) == "bad" && partly.Failed[0].SenderFault, partly.Failed)
}

func (s *scenarios) visibility() {
	c := s.checks
	url := s.create(s.run+"-vis", map[string]string{"VisibilityTimeout": "60"})
	must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("again")}))
	first := s.receive(url, 1, 1)[0]
	must(s.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
		ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 0}))
	again := s.receive(url, 1, 1)
	c.Equal("ChangeMessageVisibility 0 makes it receivable at once", 1, len(again))
	if len(again) == 0 {
		return
	}
	c.Equal("its receive count moved on", "2", again[0].Attributes["ApproximateReceiveCount"])
	must(s.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url),
		Entries: []types.ChangeMessageVisibilityBatchRequestEntry{{Id: aws.String("v"), ReceiptHandle: again[0].ReceiptHandle, VisibilityTimeout: 1}}}))
	c.Equal("hidden for its new timeout", 0, len(s.receive(url, 1, 0)))
	start := time.Now()
	third := s.receive(url, 1, 5)
	waited := time.Since(start).Seconds()
	c.Equal("it comes back when the timeout ends", 1, len(third))
	c.Check("within the long poll, about a second later", waited < 4.5, waited)
	s.deleteAll(url, third)
}

func (s *scenarios) longPoll() {
	c := s.checks
	url := s.create(s.run+"-long", nil)
	start := time.Now()
	c.Equal("an empty long poll returns no message", 0, len(s.receive(url, 1, 1)))
	waited := time.Since(start).Seconds()
	c.Check("after waiting its WaitTimeSeconds", waited >= 0.9 && waited < 4, waited)

	result := make(chan []types.Message, 1)
	go func() { result <- s.receive(url, 1, 10) }()
	time.Sleep(time.Second)
	sentAt := time.Now()
	must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("wake up")}))
	got := <-result
	woke := time.Since(sentAt).Seconds()
	c.Check("a waiting long poll gets the message sent meanwhile", len(got) == 1 && aws.ToString(got[0].Body) == "wake up", got)
	c.Check("promptly, not at the end of its wait", woke < 3, woke)
	s.deleteAll(url, got)
}

func (s *scenarios) fifo() {
	c := s.checks
	url := s.create(s.run+"-orders.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "30"})
	var sequence []string
	sequenceOf := map[string]string{}
	for _, group := range []string{"g1", "g2"} {
		for i := 1; i <= 3; i++ {
			body := fmt.Sprintf("%s-%d", group, i)
			out := must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url),
				MessageBody: aws.String(body), MessageGroupId: aws.String(group)}))
			sequence = append(sequence, aws.ToString(out.SequenceNumber))
			sequenceOf[body] = aws.ToString(out.SequenceNumber)
		}
	}
	c.Check("FIFO sends return increasing sequence numbers", increasing(sequence), sequence)
	must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("g1-1"), MessageGroupId: aws.String("g1")}))
	c.Equal("a duplicate within the window is accepted and not queued", "6", s.attributes(url)["ApproximateNumberOfMessages"])
	var batch []types.SendMessageBatchRequestEntry
	for i := 4; i <= 6; i++ {
		batch = append(batch, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("b%d", i)),
			MessageBody: aws.String(fmt.Sprintf("g1-%d", i)), MessageGroupId: aws.String("g1")})
	}
	c.Equal("a FIFO batch is sent whole", 3, len(must(s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: batch})).Successful))

	got := s.receive(url, 10, 1)
	byGroup := map[string][]string{}
	var wrongAttributes []string
	for _, m := range got {
		g := m.Attributes["MessageGroupId"]
		body := aws.ToString(m.Body)
		byGroup[g] = append(byGroup[g], body)
		digest := sha256.Sum256([]byte(body))
		seq, sent := sequenceOf[body]
		if (sent && m.Attributes["SequenceNumber"] != seq) || m.Attributes["MessageDeduplicationId"] != hex.EncodeToString(digest[:]) {
			wrongAttributes = append(wrongAttributes, fmt.Sprint(body, m.Attributes))
		}
	}
	c.Check("a received FIFO message carries its send's SequenceNumber and its content-based MessageDeduplicationId",
		len(wrongAttributes) == 0, wrongAttributes)
	want1 := []string{"g1-1", "g1-2", "g1-3", "g1-4", "g1-5", "g1-6"}
	want2 := []string{"g2-1", "g2-2", "g2-3"}
	c.Equal("group g1 comes in the order sent", want1[:len(byGroup["g1"])], append([]string{}, byGroup["g1"]...))
	c.Equal("group g2 comes in the order sent", want2[:len(byGroup["g2"])], append([]string{}, byGroup["g2"]...))
	c.Check("the first receive returns messages of both groups", len(byGroup) == 2, byGroup)
	c.Equal("while their messages are in flight the groups are blocked", 0, len(s.receive(url, 10, 0)))

	head := got[0]
	must(s.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: head.ReceiptHandle, VisibilityTimeout: 0}))
	redelivered := s.receive(url, 1, 1)
	c.Check("a message made visible again is delivered before those after it",
		len(redelivered) == 1 && aws.ToString(redelivered[0].Body) == aws.ToString(head.Body), redelivered)
	var rest []types.Message
	for _, m := range got[1:] {
		rest = append(rest, m)
	}
	rest = append(rest, redelivered...)
	c.Equal("deleting every delivered message succeeds", len(rest), s.deleteAll(url, rest))
	more := 0
	for round := 0; round < 10 && more < 9-len(got); round++ {
		next := s.receive(url, 10, 1)
		more += len(next)
		s.deleteAll(url, next)
	}
	c.Equal("the rest of the groups follow once the first messages are deleted", 9-len(got), more)
}

func increasing(numbers []string) bool {
	for i := range numbers {
		n, ok := new(big.Int).SetString(numbers[i], 10)
		if !ok {
			return false
		}
		if i > 0 {
			prev, _ := new(big.Int).SetString(numbers[i-1], 10)
			if n.Cmp(prev) <= 0 {
				return false
			}
		}
	}
	return len(numbers) > 0
}

func (s *scenarios) deadLetters() {
	c := s.checks
	dlq := s.create(s.run+"-dlq", nil)
	dlqArn := s.attributes(dlq)["QueueArn"]
	work := s.create(s.run+"-work", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqArn + `","maxReceiveCount":"2"}`})
	sent := must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(work), MessageBody: aws.String("poison")}))
	for i := 1; i <= 2; i++ {
		// The Go SDK leaves an int32 of 0 out of a request (ReceiveMessageInput.VisibilityTimeout: 0 is
		// "the queue's timeout"), so the message is released with ChangeMessageVisibility, whose
		// VisibilityTimeout is required and always sent.
		out := must(s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(work), WaitTimeSeconds: 1}))
		c.Equal(fmt.Sprintf("receive %d of 2 from the source queue", i), 1, len(out.Messages))
		for _, m := range out.Messages {
			must(s.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(work),
				ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}))
		}
	}
	c.Equal("past maxReceiveCount the source queue has nothing", 0, len(s.receive(work, 10, 1)))
	dead := s.receive(dlq, 10, 2)
	c.Check("the message is in the dead-letter queue with its MessageId",
		len(dead) == 1 && aws.ToString(dead[0].Body) == "poison" && aws.ToString(dead[0].MessageId) == aws.ToString(sent.MessageId), dead)
	sources := must(s.sqs.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq)}))
	c.Equal("ListDeadLetterSourceQueues names the source", []string{work}, sources.QueueUrls)
	for _, m := range dead {
		must(s.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(dlq), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}))
	}
	task := must(s.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)}))
	c.Check("StartMessageMoveTask returns a task handle", aws.ToString(task.TaskHandle) != "", task.TaskHandle)
	status := ""
	for i := 0; i < 100 && status != "COMPLETED"; i++ {
		tasks := must(s.sqs.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqArn)}))
		if len(tasks.Results) > 0 {
			status = aws.ToString(tasks.Results[0].Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.Equal("the move task completes", "COMPLETED", status)
	back := s.receive(work, 10, 2)
	c.Check("the message is back in its source queue", len(back) == 1 && aws.ToString(back[0].Body) == "poison", back)
	s.deleteAll(work, back)
}

func (s *scenarios) errors() {
	c := s.checks
	url := s.create(s.run+"-errors", map[string]string{"VisibilityTimeout": "30"})
	_, err := s.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(s.run + "-missing")})
	ExpectError[*types.QueueDoesNotExist](c, "GetQueueUrl of a missing queue: QueueDoesNotExist", err)
	c.Equal("with status 400", 400, StatusCode(err))
	_, err = s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url + "-missing"), MessageBody: aws.String("x")})
	ExpectError[*types.QueueDoesNotExist](c, "SendMessage to a missing queue: QueueDoesNotExist", err)
	_, err = s.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(s.run + "-errors"), Attributes: map[string]string{"VisibilityTimeout": "31"}})
	ExpectError[*types.QueueNameExists](c, "CreateQueue with other attributes: QueueNameExists", err)
	_, err = s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("nul \x00")})
	ExpectError[*types.InvalidMessageContents](c, "a body with U+0000: InvalidMessageContents", err)
	_, err = s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{}})
	ExpectError[*types.EmptyBatchRequest](c, "an empty batch: EmptyBatchRequest", err)
	var eleven []types.SendMessageBatchRequestEntry
	for i := 0; i < 11; i++ {
		eleven = append(eleven, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprintf("e%d", i)), MessageBody: aws.String("m")})
	}
	_, err = s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: eleven})
	ExpectError[*types.TooManyEntriesInBatchRequest](c, "11 entries: TooManyEntriesInBatchRequest", err)
	_, err = s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("same"), MessageBody: aws.String("a")}, {Id: aws.String("same"), MessageBody: aws.String("b")}}})
	ExpectError[*types.BatchEntryIdsNotDistinct](c, "two entries with one id: BatchEntryIdsNotDistinct", err)
	_, err = s.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("bad id"), MessageBody: aws.String("a")}}})
	ExpectError[*types.InvalidBatchEntryId](c, "an entry id with a space: InvalidBatchEntryId", err)
	_, err = s.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("not-a-receipt-handle")})
	ExpectError[*types.ReceiptHandleIsInvalid](c, "a made-up receipt handle: ReceiptHandleIsInvalid", err)
	_, err = s.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"NoSuchAttribute"}})
	ExpectError[*types.InvalidAttributeName](c, "an unknown attribute name: InvalidAttributeName", err)
	_, err = s.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 11})
	c.Check("MaxNumberOfMessages 11: a 400 InvalidParameterValue", StatusCode(err) == 400 && ErrorCode(err) == "InvalidParameterValue", err)

	must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("in flight")}))
	m := s.receive(url, 1, 1)[0]
	must(s.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}))
	_, err = s.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
	ExpectError[*types.MessageNotInflight](c, "visibility 0 on a message not in flight: MessageNotInflight", err)
	must(s.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}))
	_, err = s.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	ExpectError[*types.PurgeQueueInProgress](c, "a second PurgeQueue within 60 s: PurgeQueueInProgress", err)
}

func (s *scenarios) lifecycle() {
	c := s.checks
	url := s.create(s.run+"-life", map[string]string{"DelaySeconds": "0"})
	must(s.sqs.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{"team": "payments", "env": "test"}}))
	c.Equal("ListQueueTags returns the tags", map[string]string{"team": "payments", "env": "test"},
		must(s.sqs.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})).Tags)
	must(s.sqs.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: aws.String(url), TagKeys: []string{"env"}}))
	c.Equal("UntagQueue removes one", map[string]string{"team": "payments"},
		must(s.sqs.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})).Tags)
	must(s.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"MessageRetentionPeriod": "3600"}}))
	c.Equal("SetQueueAttributes changes the retention", "3600", s.attributes(url)["MessageRetentionPeriod"])
	listed := must(s.sqs.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(s.run + "-life")}))
	c.Equal("ListQueues with the run's prefix lists the queue", []string{url}, listed.QueueUrls)
	var pageQueues, paged []string
	for i := 0; i < 3; i++ {
		pageQueues = append(pageQueues, s.create(fmt.Sprintf("%s-page-%d", s.run, i), nil))
	}
	pages := sqs.NewListQueuesPaginator(s.sqs, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(s.run + "-page-"), MaxResults: aws.Int32(1)})
	for pages.HasMorePages() {
		paged = append(paged, must(pages.NextPage(ctx)).QueueUrls...)
	}
	c.Equal("ListQueuesPaginator with pages of one lists every queue once", pageQueues, paged)
	for i := 0; i < 5; i++ {
		must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("to purge")}))
	}
	must(s.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("delayed"), DelaySeconds: 30}))
	c.Equal("a delayed message is counted as delayed", "1", s.attributes(url)["ApproximateNumberOfMessagesDelayed"])
	must(s.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}))
	purged := s.attributes(url)
	c.Equal("PurgeQueue empties it", "0", purged["ApproximateNumberOfMessages"])
	c.Equal("delayed messages too", "0", purged["ApproximateNumberOfMessagesDelayed"])
	must(s.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}))
	_, err := s.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(s.run + "-life")})
	ExpectError[*types.QueueDoesNotExist](c, "a deleted queue does not exist", err)
}

func (s *scenarios) credentials(reader, wrongSecret, unknownKey *sqs.Client) {
	c := s.checks
	url := s.create(s.run+"-auth", nil)
	_, err := wrongSecret.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
	c.Check("a wrong secret: 403 SignatureDoesNotMatch", StatusCode(err) == 403 && ErrorCode(err) == "SignatureDoesNotMatch", err)
	_, err = unknownKey.ListQueues(ctx, &sqs.ListQueuesInput{})
	c.Check("an unknown access key: 403 InvalidClientTokenId", StatusCode(err) == 403 && ErrorCode(err) == "InvalidClientTokenId", err)
	attrs, err := reader.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if c.NoError("an identity with get_status may read the queue's attributes", err) {
		c.Equal("and sees it empty", "0", attrs.Attributes["ApproximateNumberOfMessages"])
	}
	_, err = reader.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
	c.Check("but not send: 403 AccessDenied", StatusCode(err) == 403 && ErrorCode(err) == "AccessDenied", err)
	c.Equal("and the refused send changed nothing", "0", s.attributes(url)["ApproximateNumberOfMessages"])
}

// regions: queues live per region; the same name signed for eu-west-1 is another queue.
func (s *scenarios) regions(ireland *sqs.Client) {
	c := s.checks
	name := s.run + "-regional"
	here := s.create(name, nil)
	there := *must(ireland.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})).QueueUrl
	c.Check("the same name in eu-west-1 is another queue, its URL naming the region", there != here && strings.Contains(there, "/eu-west-1/"), there)
	must(ireland.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(there), MessageBody: aws.String("in Ireland")}))
	c.Equal("a message sent there is not in the us-east-1 queue", "0", s.attributes(here)["ApproximateNumberOfMessages"])
	got := must(ireland.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(there), WaitTimeSeconds: 1})).Messages
	c.Check("it is received there", len(got) == 1 && aws.ToString(got[0].Body) == "in Ireland", got)
	arn := must(ireland.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(there),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})).Attributes["QueueArn"]
	c.Equal("the queue's ARN names the region", "arn:aws:sqs:eu-west-1:123456789012:"+name, arn)
	listed := must(ireland.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(name)})).QueueUrls
	c.Equal("ListQueues signed for eu-west-1 lists that region's queue only", []string{there}, listed)
}
