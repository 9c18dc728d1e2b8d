package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// Checks prints numbered assertions ("ok N - what" or "FAIL N - what: why") and, from Finish,
// "N passed, M failed" last; the pytest wrapper (tests/clients/programs.py) reads those lines.
type Checks struct {
	mu             sync.Mutex
	number, passed int
	failed         int
}

func (c *Checks) Check(what string, ok bool, detail any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.number++
	if ok {
		c.passed++
		fmt.Printf("ok %d - %s\n", c.number, what)
	} else {
		c.failed++
		fmt.Printf("FAIL %d - %s: %v\n", c.number, what, detail)
	}
}

func (c *Checks) Equal(what string, expected, actual any) {
	c.Check(what, reflect.DeepEqual(expected, actual), fmt.Sprintf("expected <%v> but was <%v>", expected, actual))
}

// NoError records that a call succeeded; it returns whether it did.
func (c *Checks) NoError(what string, err error) bool {
	c.Check(what, err == nil, err)
	return err == nil
}

// Step runs one scenario; a panic in it is one failed check and the program goes on.
func (c *Checks) Step(what string, step func()) {
	defer func() {
		if r := recover(); r != nil {
			c.Check(what+" (step panicked)", false, r)
		}
	}()
	step()
}

// ExpectError records that err is a *T (a modelled error of the SDK) and returns it.
func ExpectError[T error](c *Checks, what string, err error) T {
	var target T
	if err == nil {
		c.Check(what, false, "no error")
	} else if !errors.As(err, &target) {
		c.Check(what, false, fmt.Sprintf("%T: %v", err, err))
	} else {
		c.Check(what, true, nil)
	}
	return target
}

// ErrorCode is the error code an API error carries ("" for none).
func ErrorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// StatusCode is the HTTP status of a failed call (0 for none).
func StatusCode(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func (c *Checks) Finish() {
	fmt.Printf("%d passed, %d failed\n", c.passed, c.failed)
	if c.failed > 0 || c.passed == 0 {
		os.Exit(1)
	}
}

// must panics on an error: a step's setup call that fails ends the step as one failed check.
func must[T any](value T, err error) T {
	if err != nil {
		panic(err)
	}
	return value
}
