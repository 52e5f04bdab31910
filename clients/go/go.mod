module frond.dev/frond/clients/go

go 1.19
