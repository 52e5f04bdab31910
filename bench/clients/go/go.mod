module frond.dev/frond/bench/clients/go

go 1.19

require frond.dev/frond/clients/go v0.0.0

replace frond.dev/frond/clients/go => ../../../clients/go
