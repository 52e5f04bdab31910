// SPDX-License-Identifier: Apache-2.0

package frond_test

import (
	"context"
	"fmt"
	"time"

	frond "frond.dev/frond/clients/go"
)

// A client for two servers, and a tag whose IDs come from leased ranges.
func Example() {
	c, err := frond.New(frond.Options{
		Servers: []string{"http://10.0.0.5:8080", "http://10.0.0.6:8080"},
		Timeout: time.Second,
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	orders, err := c.Tag("orders", &frond.TagOptions{Validity: 10 * time.Minute})
	if err != nil {
		panic(err)
	}
	id, err := orders.Next() // in-process while the leased range lasts
	switch frond.CodeOf(err) {
	case "":
		fmt.Println("order", id)
	case "TAG_NOT_FOUND":
		fmt.Println("create the tag first: frond tag create orders --step 1000")
	default: // UNAVAILABLE, TIMEOUT, SEGMENT_UNAVAILABLE, ...
		fmt.Println(err)
	}

	ids, err := c.NextBatch(context.Background(), 100) // snowflake IDs
	if err == nil {
		fmt.Println(len(ids), "snowflake IDs")
	}
}
