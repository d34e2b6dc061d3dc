; C# definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.

(namespace_declaration name: (_) @name.package)
(file_scoped_namespace_declaration name: (_) @name.package)

; --- types
(class_declaration name: (identifier) @name.definition.class) @definition.class
(interface_declaration name: (identifier) @name.definition.interface) @definition.interface
(struct_declaration name: (identifier) @name.definition.struct) @definition.struct
(enum_declaration name: (identifier) @name.definition.enum) @definition.enum
(record_declaration name: (identifier) @name.definition.record) @definition.record

; --- methods, constructors, properties with code, local functions (no body: not a definition)
(method_declaration name: (identifier) @name.definition.method body: (_)) @definition.method
(constructor_declaration name: (identifier) @name.definition.constructor body: (_)) @definition.constructor
(destructor_declaration name: (identifier) @name.definition.method body: (_)) @definition.method
(operator_declaration "operator" @name.definition.method body: (_)) @definition.method
(property_declaration name: (identifier) @name.definition.method
  accessors: (accessor_list (accessor_declaration body: (_)))) @definition.method
(property_declaration name: (identifier) @name.definition.method value: (arrow_expression_clause)) @definition.method
(local_function_statement name: (identifier) @name.definition.function body: (_)) @definition.function

; --- base types
(base_list (identifier) @name.reference.inherits) @reference.inherits
(base_list (generic_name (identifier) @name.reference.inherits)) @reference.inherits
(base_list (qualified_name qualifier: (_) @receiver.reference.inherits
                           name: (identifier) @name.reference.inherits)) @reference.inherits

; --- calls
(invocation_expression function: (identifier) @name.reference.call) @reference.call
(invocation_expression function: (generic_name (identifier) @name.reference.call)) @reference.call
(invocation_expression
  function: (member_access_expression expression: _ @receiver.reference.call
                                      name: (identifier) @name.reference.call)) @reference.call
(invocation_expression
  function: (member_access_expression expression: _ @receiver.reference.call
                                      name: (generic_name (identifier) @name.reference.call))) @reference.call
(object_creation_expression type: (identifier) @name.reference.call) @reference.call
(object_creation_expression type: (generic_name (identifier) @name.reference.call)) @reference.call
(object_creation_expression
  type: (qualified_name qualifier: (_) @receiver.reference.call
                        name: (identifier) @name.reference.call)) @reference.call

; --- imports (using directives name namespaces or, with an alias, types)
(using_directive !name [(identifier) (qualified_name)] @module.reference.import) @reference.import
(using_directive name: (identifier) @alias.reference.import
                 [(identifier) (qualified_name)] @module.reference.import) @reference.import
