# SPDX-License-Identifier: Apache-2.0
# ruby_client.rb -- redis-rb (Debian's ruby-redis) against a running
# frond serve, for tests/integration/test_clients.py.
#
#   ruby ruby_client.rb PORT [PASSWORD]
#
# IDs as strings the server decodes back to themselves, increasing and
# unique; INCR an Integer; an unknown tag a Redis::CommandError starting
# with its code; 500 commands pipelined, answered in order. Prints one
# JSON object with the IDs it got, or why it failed (exit status 1).
require "json"
require "redis"

def check(cond, msg)
  raise "redis-rb #{Redis::VERSION}: #{msg}" unless cond
end

def ids(reply, n, what)
  check(reply.is_a?(Array) && reply.length == n, "#{what}: #{reply.inspect}")
  reply.each { |id| check(id.is_a?(String) && id =~ /\A[0-9]+\z/, "#{what}: #{id.inspect}") }
  reply.each_cons(2) { |a, b| check(Integer(b) > Integer(a), "#{what}: #{reply.inspect}") }
  reply
end

port, password = ARGV[0].to_i, ARGV[1]
r = Redis.new(host: "127.0.0.1", port: port, password: password,
              timeout: 10)
out = { "client" => "redis-rb #{Redis::VERSION}", "snowflake" => [],
        "segment" => [] }
sf = ids(r.call("ID.SNOWFLAKE", 5), 5, "ID.SNOWFLAKE 5")
sf.each do |id|
  f = Hash[*r.call("ID.DECODE", id)]
  check(f["id"] == id, "ID.DECODE #{id}: #{f.inspect}")
end
out["snowflake"].concat(sf)
a = r.incr("order")
b = r.incr("order")
check(a.is_a?(Integer) && b > a, "INCR: #{a.inspect} #{b.inspect}")
out["segment"].concat([a, b])
begin
  r.incr("nope")
  check(false, "INCR nope gave a reply")
rescue Redis::CommandError => e
  check(e.message.start_with?("TAG_NOT_FOUND "), "INCR nope: #{e.message}")
end
check(r.incr("order").is_a?(Integer), "INCR after an error")
replies = r.pipelined do |p|
  500.times { |i| i % 5 == 0 ? p.call("ID.SNOWFLAKE", 2) : p.incr("order") }
end
last = b
replies.each_with_index do |x, i|
  if i % 5 == 0
    out["snowflake"].concat(ids(x, 2, "pipelined ID.SNOWFLAKE"))
  else
    check(x.is_a?(Integer) && x > last, "pipelined INCR #{i}: #{x.inspect}")
    last = x
    out["segment"] << x
  end
end
r.close
puts JSON.generate(out)
